"""``python -m kafkatx`` runs the CLI."""

from kafkatx.cli.main import main

main()
