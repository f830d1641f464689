"""Prompt sources and the stream parsers, on exact byte streams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specconsole.bench.api import (
    RequestFailed,
    SSEDecoder,
    accept_length_from_server_info,
    apportion,
    build_request,
    make_parser,
)
from specconsole.bench.workload.prompts import (
    PromptError,
    builtin_texts,
    estimate_tokens,
    load_jsonl,
    make_prompts,
)


def test_builtin_set_is_large_varied_and_real_text() -> None:
    texts = builtin_texts()
    assert len(texts) >= 40
    assert len(set(texts)) == len(texts)
    assert all(len(t.split()) >= 15 for t in texts)  # sentences, not token soup
    kinds = " ".join(texts).lower()
    for word in ("explain", "write", "summarize", "story", "function"):
        assert word in kinds


@pytest.mark.parametrize("input_len", [32, 256, 1024])
def test_builtin_prompts_fit_the_input_length(input_len: int) -> None:
    prompts = make_prompts("builtin", 30, input_len=input_len, seed=1)
    assert len(prompts) == 30
    assert len({p.text for p in prompts}) >= 25
    for p in prompts:
        assert 0.7 * input_len <= p.est_tokens <= 1.05 * input_len + 1
        assert p.est_tokens == estimate_tokens(p.text)
    assert make_prompts("builtin", 30, input_len=input_len, seed=1) == prompts


def test_random_prompts_have_the_exact_word_count() -> None:
    prompts = make_prompts("random", 5, input_len=100, seed=3)
    assert all(len(p.text.split()) == 100 for p in prompts)
    assert len({p.text for p in prompts}) == 5


def test_jsonl_prompt_and_messages(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(
        json.dumps({"prompt": "Tell me about owls."})
        + "\n\n"
        + json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Why is the sea salty?"},
                ]
            }
        )
        + "\n"
    )
    prompts = load_jsonl(path)
    assert prompts[0].chat_messages() == [{"role": "user", "content": "Tell me about owls."}]
    assert prompts[1].messages is not None and len(prompts[1].chat_messages()) == 2
    assert "user: Why is the sea salty?" in prompts[1].text
    assert len(make_prompts(str(path), 7, input_len=10)) == 7


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json}\n", "p.jsonl:1: not valid JSON"),
        ('["a"]\n', "expected an object"),
        ('{"text": "x"}\n', 'needs a non-empty "prompt"'),
        ('{"messages": [{"role": "user"}]}\n', 'string "role" and "content"'),
        ("\n\n", "holds no prompts"),
    ],
)
def test_bad_jsonl_names_line_and_fix(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    with pytest.raises(PromptError, match=needle.replace("[", r"\[")):
        load_jsonl(path)


def test_missing_prompt_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="--prompts: cannot read"):
        make_prompts(str(tmp_path / "nope.jsonl"), 1, input_len=10)


def test_request_bodies() -> None:
    path, body = build_request(
        "generate", text="hi", messages=None, output_len=7, temperature=0.0, model=None
    )
    data = json.loads(body)
    assert path == "/generate" and data["stream"] is True
    assert data["sampling_params"] == {"max_new_tokens": 7, "temperature": 0.0, "ignore_eos": True}
    path, body = build_request(
        "chat",
        text="hi",
        messages=[{"role": "user", "content": "yo"}],
        output_len=5,
        temperature=0.0,
        model="m",
    )
    data = json.loads(body)
    assert path == "/v1/chat/completions" and data["messages"][0]["content"] == "yo"
    assert data["stream_options"]["include_usage"] is True and data["max_tokens"] == 5
    path, body = build_request(
        "completions", text="hi", messages=None, output_len=5, temperature=0.0, model="m"
    )
    assert path == "/v1/completions" and json.loads(body)["prompt"] == "hi"
    with pytest.raises(ValueError, match="api must be one of"):
        build_request("grpc", text="", messages=None, output_len=1, temperature=0, model=None)


def test_sse_decoder_handles_split_and_crlf() -> None:
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a"') == []
    assert dec.feed(b": 1}\r\n\r\n: comment\ndata:[DONE]\n") == [b'{"a": 1}', b"[DONE]"]


def _gen(n: int, final: bool = False) -> bytes:
    meta: dict[str, object] = {"completion_tokens": n, "prompt_tokens": 9}
    if final:
        meta["spec_verify_ct"] = 3
    return b"data: " + json.dumps({"text": "x" * n, "meta_info": meta}).encode() + b"\n\n"


def test_generate_parser_counts_from_meta_info_and_merges_same_read() -> None:
    parser = make_parser("generate")
    assert parser.feed(_gen(1), 0.1) == 1
    assert parser.feed(_gen(4), 0.2) == 3  # one chunk, three accepted tokens
    assert parser.feed(_gen(5) + _gen(7, final=True) + b"data: [DONE]\n\n", 0.3) == 3
    out = parser.finish()
    assert out.chunk_times == [0.1, 0.2, 0.3] and out.chunk_tokens == [1, 3, 3]
    assert out.completion_tokens == 7 and out.prompt_tokens == 9 and out.spec_verify_ct == 3


def test_generate_parser_errors() -> None:
    parser = make_parser("generate")
    parser.feed(_gen(1), 0.1)
    with pytest.raises(RequestFailed) as info:
        parser.finish()
    assert info.value.kind == "incomplete"
    parser = make_parser("generate")
    with pytest.raises(RequestFailed) as info:
        parser.feed(b'data: {"error": {"message": "out of memory"}}\n\n', 0.1)
    assert info.value.kind == "server_error" and "out of memory" in info.value.detail


def _chat(content: str | None, usage: int | None = None) -> bytes:
    obj: dict[str, object] = {"choices": [{"delta": {"content": content}}] if content else []}
    if usage is not None:
        obj["usage"] = {"prompt_tokens": 4, "completion_tokens": usage}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def test_chat_parser_with_per_chunk_usage() -> None:
    parser = make_parser("chat")
    parser.feed(b'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n', 0.05)
    parser.feed(_chat("Hello", 1), 0.1)
    parser.feed(_chat(" big world", 4), 0.2)
    parser.feed(_chat(None, 4) + b"data: [DONE]\n\n", 0.25)
    out = parser.finish()
    assert out.chunk_times == [0.1, 0.2] and out.chunk_tokens == [1, 3]
    assert out.completion_tokens == 4 and out.prompt_tokens == 4


def test_completions_parser_with_final_usage_only_apportions_by_text() -> None:
    parser = make_parser("completions")
    for t, text in ((0.1, "ab"), (0.2, "abcdef"), (0.3, "ab")):
        parser.feed(b"data: " + json.dumps({"choices": [{"text": text}]}).encode() + b"\n\n", t)
    parser.feed(_chat(None, 6) + b"data: [DONE]\n\n", 0.4)
    out = parser.finish()
    assert out.chunk_tokens == [1, 4, 1] and out.completion_tokens == 6


def test_openai_parser_without_usage_fails_clearly() -> None:
    parser = make_parser("completions")
    parser.feed(b'data: {"choices": [{"text": "a"}]}\n\ndata: [DONE]\n\n', 0.1)
    with pytest.raises(RequestFailed) as info:
        parser.finish()
    assert info.value.kind == "no_usage" and "include_usage" in info.value.detail


def test_apportion() -> None:
    assert apportion(10, [1, 1]) == [5, 5]
    assert apportion(6, [2, 6, 2]) == [1, 4, 1]
    assert sorted(apportion(2, [5, 5, 5])) == [0, 1, 1]
    assert apportion(4, [0, 10]) == [1, 3]
    assert apportion(0, []) == []
    assert sum(apportion(17, [3, 0, 9, 1])) == 17


def test_accept_length_from_server_info() -> None:
    assert (
        accept_length_from_server_info({"internal_states": [{"avg_spec_accept_length": 2.5}]})
        == 2.5
    )
    assert accept_length_from_server_info({"decode": [{"avg_spec_accept_length": 3}]}) == 3.0
    assert accept_length_from_server_info({"internal_states": [{}]}) is None
    assert accept_length_from_server_info("nope") is None
