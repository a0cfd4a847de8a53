"""`python -m cosydesk` is the same as the `cosydesk` command."""

import sys

from cosydesk.cli import main

sys.exit(main())
