"""Every bundled metric's parameters are declared once, on its class (issue 21 part 2): a spec
built by a function lists the very declarations of the class it builds, never a second copy."""

from __future__ import annotations

import pytest

from evalframe.metrics.listing import _example
from evalframe.metrics.params import declared, params_of
from evalframe.metrics.registry import available

BUNDLED = [spec for spec in available() if spec.build.__module__.startswith("evalframe.")]


@pytest.mark.parametrize("spec", BUNDLED, ids=lambda spec: spec.name)
def test_the_spec_lists_its_class_declarations(spec):
    built = type(_example(spec))
    on_class = params_of(built)
    for param in spec.params:
        assert param in on_class, f"`{spec.name}` declares `{param.name}` again (not a declaration of {built.__name__})"


def test_declared_picks_by_name_and_refuses_an_unknown_one():
    from evalframe.metrics.generation_overlap import Rouge

    assert [p.name for p in declared(Rouge, "use_stemmer")] == ["use_stemmer"]
    assert [p.name for p in declared(Rouge)] == ["variant", "use_stemmer", "compare_to"]
    with pytest.raises(TypeError, match="declares no parameter stemmer"):
        declared(Rouge, "stemmer")
