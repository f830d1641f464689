"""Request bodies and streaming-response parsers for the three APIs the benchmark speaks.

Why a module of its own, and why stdlib-only: the same request shapes and the same SSE
parsing must run in the console (over httpx) and on the GPU box (inside the self-contained
remote runner, over a tiny stdlib asyncio client). Keeping them free of any HTTP library
means both paths measure identically and no parsing logic is duplicated.

Token counts always come from the server: ``meta_info.completion_tokens`` (cumulative on every
``/generate`` chunk) and ``usage`` for the OpenAI APIs (requested per chunk with
``continuous_usage_stats``; when a server only sends the final usage, the total is spread
over the text chunks in proportion to their characters). Chunks are never counted as tokens,
because with speculative decoding one chunk often carries several accepted tokens. A count is
what the box says, so it is checked (:func:`server_count`): one that is not a whole number from
0 to :data:`MAX_TOKEN_COUNT` (a string, ``1e400``, a list, a negative, a 5,000-digit figure)
fails the request as ``protocol``, naming the field — never a traceback, never a figure.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from specconsole.bench.waits import MAX_BODY_BYTES, RequestFailed

API_GENERATE = "generate"
API_COMPLETIONS = "completions"
API_CHAT = "chat"
APIS: tuple[str, ...] = (API_GENERATE, API_COMPLETIONS, API_CHAT)

BACKEND_NAMES: dict[str, str] = {
    API_GENERATE: "sglang",
    API_COMPLETIONS: "sglang-oai",
    API_CHAT: "sglang-oai-chat",
}
"""bench_serving's ``--backend`` name for each API (used in records)."""

PATHS: dict[str, str] = {
    API_GENERATE: "/generate",
    API_COMPLETIONS: "/v1/completions",
    API_CHAT: "/v1/chat/completions",
}


def build_request(
    api: str,
    *,
    text: str,
    messages: list[dict[str, str]] | None,
    output_len: int,
    temperature: float,
    model: str | None,
    extra_body: dict[str, Any] | None = None,
) -> tuple[str, bytes]:
    """The path and JSON body of one streaming request with a fixed output length;
    ``extra_body`` is merged in last (bench_serving's ``--extra-request-body``)."""
    body: dict[str, Any]
    if api == API_GENERATE:
        body = {
            "text": text,
            "sampling_params": {
                "max_new_tokens": output_len,
                "temperature": temperature,
                "ignore_eos": True,
            },
            "stream": True,
        }
    elif api in (API_COMPLETIONS, API_CHAT):
        body = {
            "model": model or "default",
            "max_tokens": output_len,
            "temperature": temperature,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if api == API_CHAT:
            body["messages"] = (
                messages if messages is not None else [{"role": "user", "content": text}]
            )
        else:
            body["prompt"] = text
    else:
        raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")
    if extra_body:
        body.update(extra_body)
    return PATHS[api], json.dumps(body, separators=(",", ":")).encode()


# --------------------------------------------------------------------------------------------
# SSE framing
# --------------------------------------------------------------------------------------------


class SSEDecoder:
    """Splits a byte stream into SSE ``data:`` payloads (other fields are ignored).

    A partial line is kept as a list of pieces, joined once its newline arrives: a long line
    costs O(n), not a copy per read, and a line over :data:`MAX_BODY_BYTES` fails the request.
    """

    __slots__ = ("_parts", "_size")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    @property
    def pending(self) -> bool:
        """Whether a partial line waits for the rest of its bytes."""
        return bool(self._parts)

    def block(self, data: bytes) -> bytes:
        """The complete lines received so far (b"" if none); keeps the partial last line."""
        cut = data.rfind(b"\n") + 1
        if not cut:  # no line ends here: keep the piece
            self._size += len(data)
            if self._size > MAX_BODY_BYTES:
                raise RequestFailed("protocol", f"an SSE line over {MAX_BODY_BYTES >> 20} MiB")
            if data:
                self._parts.append(data)
            return b""
        if self._parts:
            head = b"".join(self._parts) + data[:cut]
            self._parts.clear()
        else:
            head = data[:cut]
        rest = data[cut:]
        self._size = len(rest)
        if rest:
            self._parts.append(rest)
        return head

    def feed(self, data: bytes) -> list[bytes]:
        return payloads(self.block(data))


def payloads(block: bytes) -> list[bytes]:
    """The non-empty ``data:`` payloads of complete SSE lines."""
    out: list[bytes] = []
    for line in block.split(b"\n"):
        if line[:5] == b"data:":
            payload = line[5:].strip()
            if payload:
                out.append(payload)
    return out


# --------------------------------------------------------------------------------------------
# Stream parsers
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class StreamOutcome:
    """What one finished stream said: per-chunk token arrivals and the server's counts."""

    chunk_times: list[float]
    chunk_tokens: list[int]
    prompt_tokens: int | None
    completion_tokens: int
    spec_verify_ct: int | None


MAX_TOKEN_COUNT = 10**12
"""No stream counts this many tokens: a larger figure is not a count."""
_MAX_DIGITS = len(str(MAX_TOKEN_COUNT)) - 1


def server_count(value: Any, field: str) -> int:
    """``value`` (a count from the server's JSON) as a whole number from 0 up to
    :data:`MAX_TOKEN_COUNT`; anything else fails the request as ``protocol``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_TOKEN_COUNT:
        return value
    raise RequestFailed("protocol", f"{field} is {repr(value)[:40]}, not a token count")


def _optional_count(value: Any, field: str) -> int | None:
    return None if value is None else server_count(value, field)


def _digits(raw: bytes) -> int:
    """A count the fast path matched as digits (at most :data:`MAX_TOKEN_COUNT`'s)."""
    if len(raw) > _MAX_DIGITS:
        raise RequestFailed("protocol", f"completion_tokens of {len(raw):,} digits is not a count")
    return int(raw)


_COMPLETION_RE = re.compile(rb'"completion_tokens":\s*(\d+)')
"""A count in an event: in JSON text a raw ``"`` cannot occur inside a string, so this never
matches generated text (which is escaped)."""
_COMPLETION_KEY = b'"completion_tokens":'

_PIECE_RES = {
    True: re.compile(rb'"content":\s*"((?:[^"\\]|\\.)*)"'),
    False: re.compile(rb'"text":\s*"((?:[^"\\]|\\.)*)"'),
}
"""A chunk's text (chat ``delta.content`` / completions ``text``), still JSON-escaped."""
_ERROR_SPAN = 48
"""An error event names ``"error"`` at its start (``{"error": ...}``, ``{"object": "error"``)."""


class StreamParser:
    """Base: feed raw bytes with their arrival time, then ``finish()`` for the outcome.

    Events that arrive in the same read share one timestamp, so they are merged into one
    chunk: their tokens then split the gap since the previous chunk evenly, as one multi-token
    chunk would.
    """

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self.done = False
        self.times: list[float] = []
        self.tokens: list[int] = []

    def feed(self, data: bytes, now: float) -> int:
        """Consume bytes received at ``now``; returns the new tokens seen (for the live rate
        only: an OpenAI chunk without per-chunk usage counts as one until ``finish``)."""
        if data[-1:] == b"\n" and not self._sse.pending:  # whole lines: the common case
            return self._block(data, now)
        block = self._sse.block(data)
        return self._block(block, now) if block else 0

    def _block(self, block: bytes, now: float) -> int:
        """Every event of a block of complete lines, one by one."""
        new = 0
        for payload in payloads(block):
            if payload == b"[DONE]":
                self.done = True
                continue
            new += self._event(payload, now)
        return new

    def _add(self, now: float, tokens: int) -> None:
        if self.times and self.times[-1] == now:
            self.tokens[-1] += tokens
        else:
            self.times.append(now)
            self.tokens.append(tokens)

    def _event(self, payload: bytes, now: float) -> int:
        raise NotImplementedError

    def finish(self) -> StreamOutcome:
        raise NotImplementedError

    @staticmethod
    def _check_error(obj: Any) -> None:
        if isinstance(obj, dict) and obj.get("error"):
            err = obj["error"]
            message = err.get("message", err) if isinstance(err, dict) else err
            raise RequestFailed("server_error", str(message)[:300])


def _payload_of(event: bytes) -> bytes:
    """A bare payload as is; a one-event block (``data: ...\\n\\n``) without its field name."""
    if event[:5] != b"data:":
        return event
    found = payloads(event)
    return found[0] if found else b""


def loads_response(payload: bytes, what: str = "stream") -> Any:
    """JSON from the server; anything else — bad syntax, nesting deep enough to exhaust the
    parser's recursion (a hostile server) — fails the request as ``protocol``."""
    try:
        return json.loads(payload)
    except RecursionError:
        raise RequestFailed("protocol", f"{what}: JSON nested too deeply") from None
    except ValueError as exc:
        raise RequestFailed("protocol", f"bad JSON in {what}: {payload[:120]!r}") from exc


_loads = loads_response


class GenerateParser(StreamParser):
    """SGLang ``/generate``: every chunk carries the text so far and cumulative meta_info.

    The count is cumulative, so a block of events received together needs only its last
    count: when every ``data:`` line of the block is a counted event it is read with one
    search from the end and no JSON; any other block (``[DONE]``, an error event, a count
    missing) is taken event by event. The last counted event is JSON-decoded once, in ``finish``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._count = 0
        self._last: bytes = b""

    def _block(self, block: bytes, now: float) -> int:
        events = block.count(b"data:")
        if events == 1:
            at = block.rfind(_COMPLETION_KEY)
            match = _COMPLETION_RE.match(block, at) if at >= 0 else None
            if match is None:
                return super()._block(block, now)
            count = _digits(match.group(1))
        else:
            counts = _COMPLETION_RE.findall(block)
            if not counts or len(counts) != events:  # [DONE], an error, an uncounted event
                return super()._block(block, now)
            count = _digits(counts[-1])
        return self._counted(block, count, now)

    def _event(self, payload: bytes, now: float) -> int:
        match = _COMPLETION_RE.search(payload)
        if match is None:
            self._check_error(_loads(payload))
            return 0
        return self._counted(payload, _digits(match.group(1)), now)

    def _counted(self, event: bytes, count: int, now: float) -> int:
        """A cumulative ``count`` seen at ``now``; returns the tokens it adds."""
        self._last = event
        new = count - self._count
        if new <= 0:
            return 0
        self._count = count
        times = self.times
        if times and times[-1] == now:  # _add, inlined: once per read on the hot path
            self.tokens[-1] += new
        else:
            times.append(now)
            self.tokens.append(new)
        return new

    def finish(self) -> StreamOutcome:
        if not self.done:
            raise RequestFailed("incomplete", "stream ended before [DONE]")
        last = [p for p in payloads(self._last) or [self._last] if _COMPLETION_RE.search(p)]
        if not last:
            raise RequestFailed("empty", "stream carried no meta_info")
        event = _loads(last[-1])
        meta = (event.get("meta_info") if isinstance(event, dict) else None) or {}
        if not isinstance(meta, dict):
            raise RequestFailed("protocol", f"meta_info is {repr(meta)[:40]}, not an object")
        return StreamOutcome(
            chunk_times=self.times,
            chunk_tokens=self.tokens,
            prompt_tokens=_optional_count(meta.get("prompt_tokens"), "prompt_tokens"),
            completion_tokens=server_count(
                meta.get("completion_tokens", self._count), "completion_tokens"
            ),
            spec_verify_ct=_optional_count(meta.get("spec_verify_ct"), "spec_verify_ct"),
        )


class OpenAIParser(StreamParser):
    """``/v1/completions`` and ``/v1/chat/completions`` with ``include_usage``.

    An event with a cumulative ``usage.completion_tokens`` (``continuous_usage_stats``) is
    read with two regex searches (its count, its text piece); only other events (no usage,
    an error) are JSON-decoded. The last usage is decoded once, in ``finish``.
    """

    def __init__(self, chat: bool) -> None:
        super().__init__()
        self._chat = chat
        self._piece_re = _PIECE_RES[chat]
        self._piece_key = b'"content":' if chat else b'"text":'
        self._chars: list[int] = []
        self._cumulative: list[int | None] = []
        self._usage: dict[str, Any] | None = None
        self._usage_payload: bytes = b""
        self._count = 0

    def _block(self, block: bytes, now: float) -> int:
        if block.count(b"data:") == 1:  # the usual block: one event, read in place
            return self._event(block, now)
        return super()._block(block, now)

    def _event(self, payload: bytes, now: float) -> int:
        """One event (a bare payload, or a block holding exactly one ``data:`` line)."""
        at = payload.rfind(_COMPLETION_KEY)
        match = _COMPLETION_RE.match(payload, at) if at >= 0 else None
        if match is None or payload.find(b'"error"', 0, _ERROR_SPAN) >= 0:
            payload = _payload_of(payload)
            if payload == b"[DONE]":
                self.done = True
                return 0
            return self._decoded(payload, now) if payload else 0
        self._usage_payload = payload
        chars = self._piece_chars(payload)
        return self._record(now, chars, _digits(match.group(1))) if chars else 0

    def _piece_chars(self, payload: bytes) -> int:
        """Length of the first ``"content"`` (chat) / ``"text"`` value, still escaped; 0 when
        absent, empty or not a string (``null``) — as ``choices[0]`` would read."""
        key = self._piece_key
        at = payload.find(key)
        if at < 0:
            return 0
        start = at + len(key)
        if payload[start : start + 1] != b'"':  # spaced JSON, null: the exact regex decides
            piece = self._piece_re.match(payload, at)
            return len(piece.group(1)) if piece else 0
        end = payload.find(b'"', start + 1)
        if payload[end - 1] == 0x5C:  # an escaped quote inside: the exact regex decides
            piece = self._piece_re.match(payload, at)
            return len(piece.group(1)) if piece else 0
        return end - start - 1

    def _decoded(self, payload: bytes, now: float) -> int:
        obj = _loads(payload)
        self._check_error(obj)
        usage = obj.get("usage") if isinstance(obj, dict) else None
        if isinstance(usage, dict):
            self._usage, self._usage_payload = usage, b""
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not choices:
            return 0
        choice = choices[0]
        piece = (choice.get("delta") or {}).get("content") if self._chat else choice.get("text")
        if not piece:
            return 0
        cumulative = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return self._record(now, len(piece), _optional_count(cumulative, "completion_tokens"))

    def _record(self, now: float, chars: int, cumulative: int | None) -> int:
        times = self.times
        if times and times[-1] == now:
            self._chars[-1] += chars
            self._cumulative[-1] = cumulative
        else:
            times.append(now)
            self._chars.append(chars)
            self._cumulative.append(cumulative)
        if cumulative is None:
            return 1
        new = cumulative - self._count
        if new <= 0:
            return 0
        self._count = cumulative
        return new

    def finish(self) -> StreamOutcome:
        if not self.done:
            raise RequestFailed("incomplete", "stream ended before [DONE]")
        if self._usage_payload:
            event = _loads(_payload_of(self._usage_payload))
            usage = event.get("usage") if isinstance(event, dict) else None
            self._usage = usage if isinstance(usage, dict) else self._usage
        if self._usage is None or self._usage.get("completion_tokens") is None:
            raise RequestFailed(
                "no_usage",
                "the server sent no usage; it must honour stream_options.include_usage",
            )
        total = server_count(self._usage["completion_tokens"], "usage.completion_tokens")
        if self._cumulative and all(c is not None for c in self._cumulative):
            counts = [int(c) for c in self._cumulative if c is not None]
            tokens = [counts[0]] + [b - a for a, b in itertools.pairwise(counts)]
        else:
            tokens = apportion(total, self._chars)
        times = [t for t, k in zip(self.times, tokens, strict=True) if k > 0]
        tokens = [k for k in tokens if k > 0]
        prompt = self._usage.get("prompt_tokens")
        return StreamOutcome(
            chunk_times=times,
            chunk_tokens=tokens,
            prompt_tokens=_optional_count(prompt, "usage.prompt_tokens"),
            completion_tokens=total,
            spec_verify_ct=None,
        )


def apportion(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` (largest remainder), giving
    every chunk at least one token when there are enough tokens to go round."""
    n = len(weights)
    if n == 0:
        return []
    clamped = [max(1, w) for w in weights]
    weight_sum = sum(clamped)
    shares = [total * w / weight_sum for w in clamped]
    counts = [int(s) for s in shares]
    order = sorted(range(n), key=lambda i: shares[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    if total >= n:
        for i in range(n):
            if counts[i] == 0:
                counts[max(range(n), key=counts.__getitem__)] -= 1
                counts[i] = 1
    return counts


def make_parser(api: str) -> StreamParser:
    if api == API_GENERATE:
        return GenerateParser()
    if api == API_COMPLETIONS:
        return OpenAIParser(chat=False)
    if api == API_CHAT:
        return OpenAIParser(chat=True)
    raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")


def accept_length_from_server_info(info: Any) -> float | None:
    """``avg_spec_accept_length`` from a ``/server_info`` body (PD-disaggregated too)."""
    if not isinstance(info, dict):
        return None
    states = info.get("internal_states")
    if not states and isinstance(info.get("decode"), list):
        states = info["decode"]
    if isinstance(states, list) and states and isinstance(states[0], dict):
        value = states[0].get("avg_spec_accept_length")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _accept_figure(value)
    return _accept_figure(info.get("avg_spec_accept_length"))


MAX_ACCEPT_LENGTH = 65.0
"""No engine accepts more than 64 draft tokens a step, plus the bonus token."""


def _accept_figure(value: Any) -> float | None:
    """An acceptance length the server reported, when it can be one: finite, at least 1
    (the bonus token), at most :data:`MAX_ACCEPT_LENGTH` — else None (``NaN``, a negative,
    a string, ``true``: not a figure)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and 1.0 <= value <= MAX_ACCEPT_LENGTH else None
