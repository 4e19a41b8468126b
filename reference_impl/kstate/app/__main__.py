"""``python -m kstate.app CONFIG.json``: run one application instance until SIGTERM; ``--describe``: what it
supports (spec/instance-protocol.md, INST-1, INST-2)."""

from kstate.app.host import main

raise SystemExit(main())
