import sys

from mcp_server.app import main

sys.exit(main())
