"""The built-in speech model's own process: `python -m models.speech_worker`.

Moonshine's library runs in C++ (ONNX Runtime) and aborts its process on inputs it cannot
handle (a clip of a few hundredths of a second did, in a review), so it never runs inside
the server: models/speech_builtin.py starts this process at the first recording and sends
it one WAV file at a time. A line `{"id": n, "path": "..."}` in, a line `{"id": n, "text":
"..."}` or `{"id": n, "error": "..."}` out. It ends when its input does (the server ended
or let it go).

Standard library and moonshine_cpp only. The library's own prints go to stderr: stdout is
the answers' channel alone.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the library prints goes to stderr, never into an answer
    import moonshine_cpp

    model = moonshine_cpp.MoonshineModel()
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in sys.stdin:
        asked = None
        try:
            asked = json.loads(line)
            said = {"text": str(model.transcribe_wav(str(asked["path"]))).strip()}
        except Exception as exc:  # noqa: BLE001 - told to the server, which words it
            said = {"error": f"{type(exc).__name__}: {exc}"}
        said["id"] = asked.get("id") if isinstance(asked, dict) else None
        answers.write(json.dumps(said) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
