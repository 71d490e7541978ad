"""Entry point of `python -m build_graph`."""

import sys

from build_graph.cli.main import main

sys.exit(main())
