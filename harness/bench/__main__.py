import sys

from harness.bench import main

sys.exit(main())
