"""``python -m kstate.app CONFIG.json``: run one application instance until SIGTERM; ``--describe``: what it supports
(INST-2).

The ``--describe`` branch here is helper B's stand-in until helper A's (in :mod:`kstate.app.host`) is merged."""

import json
import sys

if sys.argv[1:] == ["--describe"]:
    import kstate
    from kstate.app.config import CRASH_POINTS
    from kstate.codecs.store_types import BUILT_TYPES

    EVENTS = ["starting", "opened", "restored", "running", "refused", "unclean_shutdown", "wiped", "crash", "fatal",
              "exit", "stopped"]
    print(json.dumps({"instance_protocol": 1, "implementation": "kstate-reference",
                      "version": getattr(kstate, "__version__", ""), "store_types": [t.value for t in BUILT_TYPES],
                      "crash_points": list(CRASH_POINTS), "events": EVENTS}))
    raise SystemExit(0)

from kstate.app.host import main

raise SystemExit(main())
