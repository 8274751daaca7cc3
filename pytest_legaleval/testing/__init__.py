"""Testing tools shipped with the plugin, for this project's tests and for users' own.

:mod:`.mock_openai`: a real OpenAI-compatible HTTP server on 127.0.0.1 with scripted
replies, fault injection and a byte-level hostile mode; :mod:`.fixtures`: its pytest
fixtures (``mock_openai``, ``hostile_openai``); :mod:`.strategies` and
:mod:`.reply_strategies`: hypothesis strategies for records, documents and hostile replies.

May import pytest and hypothesis; the rest of the package never imports this one.
"""
