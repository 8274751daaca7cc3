"""Development-only settings for this repository's own test runs.

The plugin itself is loaded through its ``pytest11`` entry point; it is never registered
here again.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
