"""(placeholder: filled in by the checks work in progress)."""
