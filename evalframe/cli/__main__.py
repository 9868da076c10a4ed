import sys

from evalframe.cli import main

sys.exit(main())
