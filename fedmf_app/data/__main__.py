"""``python -m fedmf_app.data check FILE...`` (:mod:`fedmf_app.data.check`)."""

import sys

from fedmf_app.data.check import main

sys.exit(main())
