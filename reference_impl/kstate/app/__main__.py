"""``python -m kstate.app CONFIG.json``: run one application instance until SIGTERM."""

from kstate.app.host import main

raise SystemExit(main())
