"""Gatehouse's Python client: ask a person before a sensitive tool call.

Standard library only, Python 3.9 or later::

    from gatehouse import gate, require_approval

    result = gate("deploy", {"env": "prod"}, summary="Deploy prod")
    if result.allow:
        deploy(**(result.modified_args if result.args_edited else {"env": "prod"}))

    @require_approval(summary=lambda amount, vendor: f"Pay {vendor} {amount}")
    def pay(amount: int, vendor: str) -> None: ...

The server is found through GATEHOUSE_URL (default http://127.0.0.1:8080)
and authenticated with GATEHOUSE_TOKEN, or given to ``Gatehouse(url, token)``.
Every failure is a deny: ``allow`` is true only for an approval.
"""

from .client import Denied, Gatehouse, HookResult, agate, gate, new_key
from .decorator import require_approval

__all__ = ["Gatehouse", "HookResult", "Denied", "gate", "agate", "require_approval", "new_key"]
__version__ = "0.1.0"
