"""Text <-> token ids for the generation node, with no download from any hub.

``bytes``: a byte-level tokenizer built in: a prompt's UTF-8 bytes are its token ids (0-255), and
a generated id below 256 is that byte. It fits ``zoo:tiny_decoder`` (vocabulary 512, random
weights: its "text" is noise, its shapes and timings are a language model's). Ids of 256 and up
have no text here (a real model's tokenizer would name them). Streaming decodes incrementally:
a multi-byte character is emitted with its last byte, never as broken pieces.

``none``: token ids only (``prompt_token_ids``); a text prompt is refused with the reason.
A model with its own tokenizer (SentencePiece, Hugging Face ``tokenizer.json``) is served by
giving its token ids; the node streams the ids back.
"""

from __future__ import annotations

import codecs

TOKENIZERS = ("bytes", "none")
BYTE_VOCAB = 256


class TokenizerError(ValueError):
    """A prompt this tokenizer cannot turn into token ids."""


class Tokenizer:
    def __init__(self, kind: str = "bytes") -> None:
        if kind not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {kind!r}")
        self.kind = kind

    def encode(self, text: str) -> list[int]:
        if self.kind == "none":
            raise TokenizerError("this node has no tokenizer (tokenizer: none): send prompt_token_ids, "
                                 "or start it with -p tokenizer:=bytes")
        return list(text.encode("utf-8"))

    def check_vocabulary(self, vocab_size: int | None) -> str:
        """'' when text can feed a model of ``vocab_size`` ids; else why not."""
        if self.kind == "bytes" and vocab_size is not None and vocab_size < BYTE_VOCAB:
            return (f"the byte tokenizer needs a vocabulary of at least {BYTE_VOCAB} ids, the model has "
                    f"{vocab_size}: send prompt_token_ids")
        return ""

    def stream(self) -> "TextStream":
        return TextStream(self.kind == "bytes")


class TextStream:
    """Token ids of one request in, text pieces out, one per token ('' while a character is
    incomplete, and for ids without text)."""

    def __init__(self, has_text: bool) -> None:
        self.has_text = has_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def piece(self, token_id: int) -> str:
        if not self.has_text or not 0 <= token_id < BYTE_VOCAB:
            return ""
        return self._decoder.decode(bytes([token_id]))

    def flush(self) -> str:
        """What an incomplete character left at the end (as U+FFFD)."""
        return self._decoder.decode(b"", final=True) if self.has_text else ""
