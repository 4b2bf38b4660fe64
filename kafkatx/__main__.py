"""``python -m kafkatx`` runs the CLI."""

import sys

if sys.argv[1:2] == ["serve"]:
    # A stop signal is a clean stop from the first moment, before the imports below.
    from kafkatx.broker.protocol.lifecycle import install_early

    install_early()

from kafkatx.cli.main import main

main()
