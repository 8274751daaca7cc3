"""Hypothesis profiles for this repository's own test suite.

They live here, not in the root ``conftest.py``: pytest loads the root conftest for every run
inside the repository, and importing hypothesis there cost each process of a
``pytest suites/ …`` evaluation (the controller and every xdist worker) about 80 ms of start-up.
The root conftest keeps to what the plugin has already imported
(``tests/integration/test_root_conftest.py`` checks it). The plugin itself is loaded through
its ``pytest11`` entry point; it is never registered here.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
