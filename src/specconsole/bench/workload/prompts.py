"""Where benchmark prompts come from: the built-in set, a user JSONL file, or random text.

Why real text by default: speculative decoding's acceptance rate depends on how predictable
the continuation is, so a benchmark fed random token soup reports an accept length (and a
speed-up) nobody will see in production. The built-in set is a few dozen varied, original
prompts (explanations, code, stories, summaries, emails...) shipped as package data; random
fixed-length text is still available for apples-to-apples comparisons with
``bench_serving --dataset-name random``.

Lengths are in tokens but measured here with a cheap estimate (~4 characters per token for
prose, one token per random word); the throughput numbers always use the server's own
``prompt_tokens`` count, so the estimate only shapes the request, never the result.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

CHARS_PER_TOKEN = 4.0
"""Rough characters-per-token of English prose for common BPE tokenizers."""

BUILTIN = "builtin"
RANDOM = "random"
CODING = "coding"
PROSE = "prose"
ALTERNATING = "alternating"
"""``alternating:coding,prose``: the named built-in workloads in turn, phase by phase."""
TEMPLATED: tuple[str, ...] = (CODING, PROSE)
"""Built-in workloads sent in the model's chat template (``bench/data/<name>.jsonl``):
realistic coding requests (code to fix, review, refactor, write) and prose (edit, write,
summarise), so a speculative sweep measures the acceptance the model shows in production."""

_WORD_LIST = (
    "time year people way day man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot "
    "right study book eye job word business issue side kind head house service friend father "
    "power hour game line end member law car city community name president team minute idea "
    "kid body information back parent face others level office door health person art war "
    "history party result change morning reason research girl guy moment air teacher force "
    "education foot boy age policy music market sense nation plan college interest death "
    "experience effect use class control care field development role effort rate heart drug "
    "show leader light voice wife police mind price report decision son view relationship "
    "town road arm difference value building action model season society tax director "
    "position player record paper space ground form event official matter center couple site "
    "project activity star table need court oil situation cost industry figure street image "
    "phone data picture practice piece land product doctor wall patient worker news test movie"
)
_WORDS = tuple(_WORD_LIST.split())
"""Common single-token English words for random fixed-length text."""


class PromptError(ValueError):
    """A prompt source is unusable; the message names the file, line and fix."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """One request's input: plain text, or chat messages (for the chat API)."""

    text: str
    """The prompt as plain text (chat messages flattened for the text APIs)."""
    messages: tuple[dict[str, str], ...] | None = None
    """Chat messages when the source gave them; None means ``[{"role": "user", ...}]``."""
    est_tokens: int = 0
    """Estimated prompt tokens (the server's count is used for metrics)."""
    output_len: int | None = None
    """This request's output tokens (datasets, ``--range-ratio``); None: the plan's."""
    reply_tokens: int | None = None
    """Estimated tokens of the reply the dataset recorded for this prompt (a ShareGPT
    conversation's answer, a custom line's assistant turn): the request's output length
    when lengths come from the dataset, as bench_serving's ShareGPT sampling does."""
    category: str = ""
    """The workload it belongs to in an alternating one (``coding``, ``prose``): its phase,
    and the category its acceptance is reported under; '' otherwise."""

    def chat_messages(self) -> list[dict[str, str]]:
        if self.messages is not None:
            return [dict(m) for m in self.messages]
        return [{"role": "user", "content": self.text}]

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "messages": None if self.messages is None else [dict(m) for m in self.messages],
            "est_tokens": self.est_tokens,
            "output_len": self.output_len,
            "reply_tokens": self.reply_tokens,
            "category": self.category,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Prompt:
        messages = data.get("messages")
        return cls(
            text=str(data["text"]),
            messages=None if messages is None else tuple(dict(m) for m in messages),
            est_tokens=int(data.get("est_tokens", 0)),
            output_len=None if data.get("output_len") is None else int(data["output_len"]),
            reply_tokens=None if data.get("reply_tokens") is None else int(data["reply_tokens"]),
            category=str(data.get("category") or ""),
        )


def estimate_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN))


def builtin_texts(name: str = "prompts") -> list[str]:
    """The packaged prompt texts of ``bench/data/<name>.jsonl``, in file order."""
    data = resources.files("specconsole.bench").joinpath(f"data/{name}.jsonl").read_text("utf-8")
    return [json.loads(line)["prompt"] for line in data.splitlines() if line.strip()]


def _fit_to_length(core: str, others: Sequence[str], input_len: int, rng: random.Random) -> str:
    """Pad a prompt with other prompts as background material, or trim it, to ~input_len.

    The request itself stays last so the model answers it; padding is real prose, so the
    draft model sees realistic text either way.
    """
    target_chars = int(input_len * CHARS_PER_TOKEN)
    if len(core) >= target_chars:
        cut = core[:target_chars]
        return cut.rsplit(" ", 1)[0] if " " in cut else cut
    background: list[str] = []
    size = len(core)
    pool = list(others)
    rng.shuffle(pool)
    i = 0
    while size < target_chars and pool:
        piece = pool[i % len(pool)]
        background.append(piece)
        size += len(piece) + 1
        i += 1
    text = "\n".join(background)
    room = max(0, target_chars - len(core) - 40)
    if len(text) > room:
        text = text[:room].rsplit(" ", 1)[0]
    return f"Background notes:\n{text}\n\nRequest: {core}" if text else core


def random_text(n_tokens: int, rng: random.Random) -> str:
    """``n_tokens`` random common words (about one token each)."""
    return " ".join(rng.choices(_WORDS, k=max(1, n_tokens)))


MIN_TOKENS = 2
"""bench_serving prunes a ShareGPT/custom entry whose prompt or answer is under 2 tokens."""

HUMAN_ROLES: frozenset[str] = frozenset({"human", "user"})
"""Who asks in a ShareGPT-style conversation (``from`` or ``role``)."""


def conversation_prompt(turns: list[Any], where: str) -> Prompt | None:
    """A ShareGPT-style conversation (``[{"from": "human", "value": ...}, {"from": "gpt",
    ...}]``; bench_serving's custom JSONL spells them ``role`` / ``content``) as a prompt:
    its first human turn, with the estimated tokens of the answer that follows it as
    ``reply_tokens``. None when the conversation asks nothing (no human turn) or the question
    is under 2 estimated tokens (bench_serving prunes prompts shorter than 2 tokens)."""
    texts: list[tuple[str, str]] = []
    for turn in turns:
        if not isinstance(turn, dict):
            raise PromptError(f'{where}: each turn must be an object like {{"from": "human", ...}}')
        who = turn.get("from", turn.get("role"))
        said = turn.get("value", turn.get("content"))
        texts.append((who if isinstance(who, str) else "", said if isinstance(said, str) else ""))
    ask = next((i for i, (who, said) in enumerate(texts) if who in HUMAN_ROLES and said), None)
    if ask is None or estimate_tokens(texts[ask][1]) < MIN_TOKENS:
        return None
    question = texts[ask][1]
    answer = texts[ask + 1][1] if ask + 1 < len(texts) else ""
    return Prompt(
        text=question,
        est_tokens=estimate_tokens(question),
        reply_tokens=estimate_tokens(answer) if answer else None,
    )


def load_jsonl(path: str | Path) -> list[Prompt]:
    """Read a user prompt file: one JSON object per line with ``prompt`` or ``messages``."""
    return load_jsonl_lines(path)


MAX_ENTRY_BYTES = 64 << 20
"""Longest dataset line or entry read (a binary file without newlines is refused, not held)."""


def _lines(file: Path) -> Iterator[str]:
    """The file's lines as text; a directory, a binary file or an endless line is a
    PromptError naming the file, the line and the fix (never a bare UnicodeDecodeError)."""
    try:
        f = open(file, "rb")  # noqa: SIM115 - closed in the finally below
    except OSError as exc:
        raise PromptError(f"--prompts: cannot read {file}: {exc.strerror or exc}") from exc
    try:
        offset = 0
        for number in range(1, 1 << 62):
            try:
                raw = f.readline(MAX_ENTRY_BYTES + 1)
            except OSError as exc:
                raise PromptError(f"--prompts: cannot read {file}: {exc.strerror or exc}") from exc
            if not raw:
                return
            if len(raw) > MAX_ENTRY_BYTES:
                raise PromptError(
                    f"{file}:{number}: a line longer than {MAX_ENTRY_BYTES >> 20} MiB; fix: "
                    "give a JSON-lines file (one prompt object per line), not a binary file"
                )
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise PromptError(
                    f"{file}:{number} (byte offset {offset + exc.start}) is not UTF-8 text; "
                    "fix: give a JSON-lines file of prompts (is it a binary file?)"
                ) from None
            offset += len(raw)
    finally:
        f.close()


def load_jsonl_lines(path: str | Path, limit: int | None = None) -> list[Prompt]:
    """The first ``limit`` prompts of a JSONL file, read line by line (streamed)."""
    file = Path(path).expanduser()
    prompts: list[Prompt] = []
    for number, line in enumerate(_lines(file), start=1):
        if limit is not None and len(prompts) >= limit:
            break
        if not line.strip():
            continue
        where = f"{file}:{number}"
        try:
            obj = json.loads(line)
        except RecursionError:
            raise PromptError(f"{where}: the JSON nests too deeply; fix: one flat object") from None
        except json.JSONDecodeError as exc:
            raise PromptError(
                f"{where}: not valid JSON ({exc.msg}); each line must be one "
                'JSON object such as {"prompt": "..."}'
            ) from exc
        if not isinstance(obj, dict):
            raise PromptError(f'{where}: expected an object like {{"prompt": "..."}}')
        out_len = obj.get("output_len")
        if out_len is not None and (
            not isinstance(out_len, int) or isinstance(out_len, bool) or out_len < 1
        ):
            raise PromptError(f'{where}: "output_len" must be a whole number >= 1')
        if isinstance(obj.get("prompt"), str) and obj["prompt"].strip():
            text = obj["prompt"]
            prompts.append(Prompt(text=text, est_tokens=estimate_tokens(text), output_len=out_len))
            continue
        messages = obj.get("messages")
        if isinstance(messages, list) and messages:
            clean: list[dict[str, str]] = []
            for m in messages:
                if not (
                    isinstance(m, dict)
                    and isinstance(m.get("role"), str)
                    and isinstance(m.get("content"), str)
                ):
                    raise PromptError(
                        f'{where}: each message needs string "role" and '
                        '"content", e.g. {"role": "user", "content": "Hi"}'
                    )
                clean.append({"role": m["role"], "content": m["content"]})
            reply: int | None = None
            if len(clean) > 1 and clean[-1]["role"] == "assistant":  # the answer it got
                reply = estimate_tokens(clean.pop()["content"])
            text = "\n".join(f"{m['role']}: {m['content']}" for m in clean)
            prompts.append(
                Prompt(
                    text=text,
                    messages=tuple(clean),
                    est_tokens=estimate_tokens(text),
                    output_len=out_len,
                    reply_tokens=reply,
                )
            )
            continue
        turns = obj.get("conversations", obj.get("conversation"))
        if isinstance(turns, list) and turns:
            prompt = conversation_prompt(turns, where)
            if prompt is not None:
                prompts.append(replace(prompt, output_len=out_len))
            continue
        raise PromptError(
            f'{where}: needs a non-empty "prompt" string, a "messages" list or a '
            '"conversations" list'
        )
    if not prompts:
        raise PromptError(
            f'--prompts: {file} holds no prompts; add lines like {{"prompt": "Explain ..."}}'
        )
    return prompts


def make_prompts(source: str, count: int, *, input_len: int, seed: int = 42) -> list[Prompt]:
    """``count`` prompts from ``builtin``, ``random`` or a JSONL path, deterministic per seed.

    Built-in prompts are fitted to ``input_len``; user prompts are used as written (their
    length is the user's choice), cycling when the file is shorter than ``count``.
    """
    if count <= 0:
        return []
    if input_len <= 0:
        raise PromptError("--input-len must be a positive number of tokens")
    rng = random.Random(seed)
    if source == RANDOM:
        return [
            Prompt(text=random_text(input_len, rng), est_tokens=input_len) for _ in range(count)
        ]
    if source == BUILTIN:
        texts = builtin_texts()
        order = list(range(len(texts)))
        rng.shuffle(order)
        out: list[Prompt] = []
        for i in range(count):
            core = texts[order[i % len(order)]]
            others = [t for j, t in enumerate(texts) if j != order[i % len(order)]]
            text = _fit_to_length(core, others, input_len, rng)
            out.append(Prompt(text=text, est_tokens=estimate_tokens(text)))
        return out
    user = load_jsonl(source)
    order = list(range(len(user)))
    rng.shuffle(order)
    return [user[order[i % len(order)]] for i in range(count)]
