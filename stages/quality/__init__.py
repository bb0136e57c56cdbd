"""The quality stage: `stage.py` (the stage, its manifest shape), `code_params.py` (the
`code:` rule parameters, presets and per-language resolution), `text_params.py` (the
`text:` filters, their thresholds and presets)."""
