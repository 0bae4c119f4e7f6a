"""The project's tests (README, "Tests"). ``ROOT`` is the checkout they test."""

from pathlib import Path

#: The repository's root: where ``manage.py``, ``scripts/`` and ``docs/`` are.
ROOT = Path(__file__).resolve().parents[1]
