"""A planted OpenAI-compatible model on 127.0.0.1 for the continuation designs' tests.

Questions read "Question <i>: what is <a> plus <b>?"; a typo'd copy misspells the planted word
"plus". Per example, two hashed uniforms decide its behaviour (shared by its typo draws, so the
pairs of an example are correlated, as real ones are). Free chain-of-thought answers are
"We add <a> and <b>.\\nThe sum is <v>.\\nThe answer is <v>." with v the sum, or the sum + 1 when
the question has a typo (unless i % 5 == 0: that typo does no harm); clean answers of
i % 7 == 0 are wrong (sum + 2); outputs of i % 11 == 0 carry no answer marker (unsplittable).

A continued assistant prefix (``continue_final_message``) is answered by what it holds:
"The sum is <sum>." gives the sum, except that a typo'd question with a ``max_tokens`` of at
most 16 (an answer span) gets an unextractable "I cannot tell." when ``u_i < UNEXTRACTABLE``;
"The sum is <sum + 1>." gives sum + 1; a prefix without either follows the question: the sum
when it is clean, and when typo'd the sum if ``r_i < RESTORE`` else sum + 1. So the planted
restoration rates are A 1, B 0, C 1 - UNEXTRACTABLE, D 0, answer-line deletion RESTORE, the
scan RESTORE below the final line's budget, 1 from it on, and 0 at budget 0 (no prefix).
With ``chat_only`` the server refuses ``continue_final_message`` as OpenAI's API does (400);
``/v1/completions`` answers a prompt rendered with tiny-random's chat template, its assistant
turn left open.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UNEXTRACTABLE = 0.2
RESTORE = 0.45
_QUESTION = re.compile(r"Question (\d+): what is (\d+) (\S+) (\d+)\?")


def uniform(i: int, salt: str) -> float:
    """Example i's hashed uniform in [0, 1)."""
    digest = hashlib.sha256(f"{salt}:{i}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def question(i: int, a: int, b: int, word: str = "plus") -> str:
    return f"Question {i}: what is {a} {word} {b}?"


def _answer(prompt: str, prefix: str | None, max_tokens: int) -> str:
    found = _QUESTION.search(prompt)
    if not found:
        return "I cannot tell."
    i, a, word, b = int(found[1]), int(found[2]), found[3], int(found[4])
    total, typo = a + b, word != "plus"
    if prefix is None:
        value = total + 2 if i % 7 == 0 else total + (typo and i % 5 != 0)
        if i % 11 == 0:
            return f"We add {a} and {b}.\nThe sum is {value}.\n{value}"
        return f"We add {a} and {b}.\nThe sum is {value}.\nThe answer is {value}."
    if f"The sum is {total}." in prefix:
        if typo and max_tokens <= 16 and uniform(i, "u") < UNEXTRACTABLE:
            return "I cannot tell."
        value = total
    elif f"The sum is {total + 1}." in prefix:
        value = total + 1
    else:
        value = total if not typo or uniform(i, "r") < RESTORE else total + 1
    return f"The answer is {value}." if prefix.endswith("\n") else f"\nThe answer is {value}."


class _Handler(BaseHTTPRequestHandler):
    chat_only = False

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/completions") and "chat" not in self.path:
            return self._complete(body)
        messages = body["messages"]
        prefix = None
        if messages[-1]["role"] == "assistant":
            if self.chat_only or not body.get("continue_final_message"):
                return self._send(400, {"error": {"message": "continue_final_message: unknown"}})
            prefix = messages[-1]["content"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        text = _answer(user, prefix, int(body["max_tokens"]))
        self._send(
            200,
            {
                "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(user.split()), "completion_tokens": 5},
            },
        )

    def _complete(self, body: dict) -> None:
        """``/v1/completions`` on a prompt rendered with tiny-random's chat template, the
        assistant's turn left open: the prefix is the text after its last ``<|assistant|>``."""
        prompt = str(body["prompt"])
        head, marker, prefix = prompt.rpartition("<|assistant|>\n")
        text = _answer(head if marker else prompt, prefix if marker else None, body["max_tokens"])
        self._send(200, {"choices": [{"text": text, "finish_reason": "stop"}], "usage": {}})

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class PlantedServer:
    """The server in a thread: ``with PlantedServer() as url:`` gives its ``/v1`` base URL."""

    def __init__(self, *, chat_only: bool = False) -> None:
        handler = type("Handler", (_Handler,), {"chat_only": chat_only})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
