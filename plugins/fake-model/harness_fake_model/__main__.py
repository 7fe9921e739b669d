"""``python -m harness_fake_model serve --port P --script FILE``."""

from .cli import main

raise SystemExit(main())
