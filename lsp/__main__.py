"""``python -m lsp``: the Troupe language server (see :mod:`lsp.app`)."""

import sys

from lsp.app import main

sys.exit(main())
