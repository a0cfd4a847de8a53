"""Entry script of the frozen app: one program, two executables.

PyInstaller builds `cosydesk` (console) and `cosydesk-gui` (windowed on Windows) from this one script so
that both share a single analysis and a single copy of every library. The executable's own name decides
which entry runs; nothing else belongs here (all logic lives in cosydesk.cli).
"""

import os
import sys

from cosydesk.cli import gui_main, main

if __name__ == "__main__":
    program = os.path.basename(sys.executable).lower()
    sys.exit(gui_main() if program.startswith("cosydesk-gui") else main())
