"""``require_approval``: a decorator that asks Gatehouse before each call."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, TypeVar, Union, cast

from .client import Denied, Gatehouse, HookResult, _client

__all__ = ["require_approval"]

F = TypeVar("F", bound=Callable[..., Any])

Summary = Union[str, Callable[..., Optional[str]], None]


def require_approval(tool_name: Optional[str] = None, *, summary: Summary = None,
                     client: Optional[Gatehouse] = None, **request: Any) -> Callable[[F], F]:
    """Asks Gatehouse before every call of the decorated function, sync or async.

    The call's arguments (bound to the function's parameters, defaults
    applied) are the tool arguments the approver sees. The function runs
    only when the verdict allows it, with the approver's edited arguments
    when there are any; otherwise ``Denied`` is raised and it does not run.

    :param tool_name: the name approvers see (default: the function's name).
    :param summary: one line for the approver, or a function that takes the
        call's arguments (defaults applied) and returns one.
    :param client: the client (default: one from GATEHOUSE_URL and GATEHOUSE_TOKEN).
    :param request: other request fields (route, agent_id, timeout_seconds, ...), not
        ``idempotency_key``: each call gets a key of its own.

    >>> @require_approval(summary=lambda env: "Deploy to " + env)
    ... def deploy(env: str) -> None: ...
    """

    if "idempotency_key" in request:
        # Given here, it would be every call's key: a later, identical call
        # would re-attach to the first one's approval, with nobody asked.
        raise TypeError("require_approval: idempotency_key would be shared by every call; "
                        "each call gets a key of its own")

    def wrap(fn: F) -> F:
        name = tool_name or fn.__name__
        sig = inspect.signature(fn)

        def ask(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[inspect.BoundArguments, Dict[str, Any]]:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            tool_args = dict(bound.arguments)
            text = summary(*bound.args, **bound.kwargs) if callable(summary) else summary
            return bound, dict(request, tool_name=name, tool_args=tool_args, summary=text)

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                bound, req = ask(args, kwargs)
                res = await _client(client).agate(req.pop("tool_name"), req.pop("tool_args"), **req)
                b = _approved(sig, bound, res)
                return await fn(*b.args, **b.kwargs)
            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound, req = ask(args, kwargs)
            res = _client(client).gate(req.pop("tool_name"), req.pop("tool_args"), **req)
            b = _approved(sig, bound, res)
            return fn(*b.args, **b.kwargs)
        return cast(F, wrapper)

    return wrap


def _approved(sig: inspect.Signature, bound: inspect.BoundArguments, res: HookResult) -> inspect.BoundArguments:
    """The arguments to run with, or Denied. Edited arguments replace the
    call's, as the server means them ("run the call with them instead of
    yours"): they must name the function's parameters, and every one the
    approver was shown (a value left out may be one the approver removed),
    or they are refused, not guessed at."""
    if not res.allow:
        raise Denied(res)
    edited = res.modified_args
    if edited is None:
        return bound
    if not isinstance(edited, Mapping):
        raise Denied(HookResult(res.request_id, res.status, False,
                                "gatehouse: approved with edited arguments that are not an object; denied",
                                edited, list(res.side_effects)))
    unknown = [k for k in edited if k not in sig.parameters]
    if unknown:
        raise Denied(HookResult(res.request_id, res.status, False,
                                "gatehouse: approved with edited arguments naming no parameter of the function "
                                "(%s); denied" % ", ".join(sorted(unknown)), edited, list(res.side_effects)))
    missing = [k for k in bound.arguments if k not in edited]
    if missing:
        raise Denied(HookResult(res.request_id, res.status, False,
                                "gatehouse: approved with edited arguments that leave out %s, which the approver "
                                "was shown; denied" % ", ".join(missing), edited, list(res.side_effects)))
    arguments: Dict[str, Any] = {k: edited[k] for k in sig.parameters if k in edited}
    return inspect.BoundArguments(sig, arguments)  # type: ignore[arg-type]
