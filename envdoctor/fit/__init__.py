"""``envdoctor fit``: will this model fit this GPU? Weights, KV cache and training memory, each term shown
with how it was derived.

Two inputs, pure computation between them (the design card's "Fit"): the model's description, read by
:mod:`.source` (``config.json`` and safetensors headers; never the weights, never model code), and the GPU's
facts (this machine's NVML answers through the GPU probe, a snapshot's, or a product from the matrix).

* :mod:`.source`: find MODEL (a directory, a config.json, the Hugging Face cache, the Hub with --online);
* :mod:`.safetensors`: header reader; :mod:`.arch`: shapes from config.json; :mod:`.quant`: bytes of
  quantized formats;
* :mod:`.memory`: weights, KV cache per token, the engines' budgets; :mod:`.training`: ZeRO, LoRA, QLoRA;
* :mod:`.core`: puts them together (:func:`core.compute`); :mod:`.judge`: the findings and their codes.
"""
