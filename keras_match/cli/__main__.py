"""`python -m keras_match.cli ...`: the `keras-match` command."""

import sys

from keras_match.cli import main

sys.exit(main())
