"""Quality gates for CI: ship criteria, the gate rules, the noise check and the PR comment."""
