"""Tiny RAG output files for the semantic and judge tests."""

from __future__ import annotations

import json
from pathlib import Path


def write_rag(path: Path, responses: dict[str, str], *, system: str = "s1") -> Path:
    """One record per sample id with its response, a question, a reference and two documents."""
    records = []
    for sample_id, response in responses.items():
        records.append({
            "sample_id": sample_id, "system": system, "query": f"What does {sample_id} say about plans?",
            "reference_answer": f"The plan of {sample_id} costs ten euros.",
            "relevant_docs": [{"doc_id": f"{sample_id}-a", "text": f"The plan of {sample_id} costs ten euros.", "relevance": 1}],
            "retrieved": [{"doc_id": f"{sample_id}-a", "text": f"The plan of {sample_id} costs ten euros.", "score": 0.9, "rank": 1},
                          {"doc_id": "other", "text": "Unrelated text about the weather.", "score": 0.5, "rank": 2}],
            "response": response,
        })
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def write_pipeline(path: Path, metrics: list[str], *, outputs=("summary.csv", "per_query.parquet", "run.json", "report.md")) -> Path:
    """A strict user pipeline of the rag format with ``metrics`` and no bootstrap."""
    path.write_text(
        "version: 1\nname: judged\ninput:\n  format: rag\n"
        f"metrics:\n  - names: [{', '.join(metrics)}]\n"
        "slices:\n  overall: []\n"
        f"outputs: [{', '.join(outputs)}]\n")
    return path
