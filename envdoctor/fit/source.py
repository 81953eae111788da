"""Finding a model's description: ``config.json`` and the safetensors headers, never the weights.

MODEL is, in this order:

1. a path: a model directory (``config.json`` beside ``*.safetensors``), or a ``config.json`` file;
2. a Hugging Face id (``org/name``) found in the local Hugging Face cache: ``$HF_HUB_CACHE``, else
   ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``, laid out
   as ``models--org--name/refs/main`` (the commit) and ``models--org--name/snapshots/COMMIT/`` (the
   files), as ``huggingface_hub`` writes it;
3. with ``--online`` only: the Hub (``$HF_ENDPOINT``, default https://huggingface.co): ``config.json``,
   ``model.safetensors.index.json`` and each shard's header by HTTP range requests (the first 8 bytes,
   then the header's length), with ``$HF_TOKEN`` as a bearer token for gated repositories. Nothing
   else is downloaded, no model code is run (``trust_remote_code`` is never involved: envdoctor reads
   JSON only).

What could not be read is said in :attr:`ModelSource.notes`, and the weights are then computed from
the architecture instead of the headers.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .safetensors import HeaderError, Tensor, header_length, parse_header, read_file_header, shards_of_index

#: The largest config.json / index we read (real ones are a few KB; an index of a 1T model ~ 10 MB).
MAX_JSON = 64 * 1024 * 1024
#: A Hugging Face repository id (``org/name``, or a bare legacy name such as ``gpt2``).
HF_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
DEFAULT_ENDPOINT = "https://huggingface.co"


class ModelError(Exception):
    """The model cannot be read at all (no config.json anywhere asked): exit 2 with this message."""


class ModelSource:
    """What was read about a model, from where, and what could not be read."""

    def __init__(self, name: str, where: str, config: Dict[str, Any], tensors: Optional[List[Tensor]] = None,
                 quant_file: Optional[Dict[str, Any]] = None, notes: Optional[List[str]] = None,
                 revision: Optional[str] = None) -> None:
        self.name = name
        self.where = where
        self.config = config
        self.tensors = tensors
        self.quant_file = quant_file
        self.notes: List[str] = list(notes or [])
        self.revision = revision

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "read_from": self.where, "revision": self.revision,
                "safetensors_headers": self.tensors is not None,
                "tensors": len(self.tensors) if self.tensors is not None else None, "notes": list(self.notes)}


# ------------------------------------------------------------------------------------------ local files

def _read_json(path: str, what: str) -> Any:
    try:
        size = os.path.getsize(path)
        if size > MAX_JSON:
            raise ModelError("%s %s is %d bytes, larger than any real one" % (what, path, size))
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JSON + 1)
    except OSError as exc:
        raise ModelError("cannot read %s %s: %s" % (what, path, exc.strerror or exc)) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelError("%s %s is not JSON (%s)" % (what, path, str(exc)[:80])) from None


def _config(doc: Any, where: str) -> Dict[str, Any]:
    if not isinstance(doc, dict):
        raise ModelError("%s is not a JSON object" % where)
    return doc


def weight_files(folder: str) -> Tuple[Optional[List[str]], List[str]]:
    """(the safetensors files holding the model, notes). None when the folder holds none."""
    notes: List[str] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        return None, ["cannot list %s: %s" % (folder, exc.strerror or exc)]
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        try:
            shards = shards_of_index(_read_json(index, "index"))
        except (ModelError, HeaderError) as exc:
            return None, ["model.safetensors.index.json: %s" % exc]
        missing = [s for s in shards if not os.path.isfile(os.path.join(folder, s))]
        if missing:
            return None, ["%d of the %d safetensors shards are not here (%s%s): a partial download"
                          % (len(missing), len(shards), missing[0], ", ..." if len(missing) > 1 else "")]
        return [os.path.join(folder, s) for s in shards], notes
    files = [n for n in names if n.endswith(".safetensors")]
    # Mistral's repositories hold the same weights twice: consolidated.safetensors (its own format) and the
    # Hugging Face shards; count the latter when both are there.
    if any(not n.startswith("consolidated") for n in files):
        files = [n for n in files if not n.startswith("consolidated")]
    if not files:
        other = [n for n in names if n.endswith((".bin", ".pt", ".pth", ".gguf"))]
        if other:
            notes.append("the weights are in %s files, which envdoctor does not open (a pickle runs code when "
                         "loaded; GGUF is another format)" % os.path.splitext(other[0])[1])
        return None, notes
    return [os.path.join(folder, n) for n in files], notes


def read_local_headers(files: List[str]) -> Tuple[Optional[List[Tensor]], List[str]]:
    tensors: List[Tensor] = []
    for path in files:
        try:
            tensors.extend(read_file_header(path))
        except (OSError, HeaderError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return None, ["%s: %s" % (os.path.basename(path), why)]
    return tensors, []


def from_folder(folder: str, name: str, where: str, revision: Optional[str] = None) -> ModelSource:
    cfg_path = os.path.join(folder, "config.json")
    if not os.path.isfile(cfg_path):
        raise ModelError("%s has no config.json" % folder)
    config = _config(_read_json(cfg_path, "config.json"), cfg_path)
    quant_file = None
    hq = os.path.join(folder, "hf_quant_config.json")
    if os.path.isfile(hq):
        try:
            quant_file = _read_json(hq, "hf_quant_config.json")
        except ModelError:
            quant_file = None
    files, notes = weight_files(folder)
    tensors: Optional[List[Tensor]] = None
    if files:
        tensors, more = read_local_headers(files)
        notes += more
    elif not notes:
        notes.append("no safetensors files beside config.json")
    if tensors is None:
        notes.append("weights computed from the architecture in config.json instead of the safetensors headers")
    return ModelSource(name, where, config, tensors, quant_file if isinstance(quant_file, dict) else None, notes,
                       revision)


# ------------------------------------------------------------------------------------------ the HF cache

def hub_cache_dir(env: Mapping[str, str]) -> str:
    """Where huggingface_hub keeps its cache (its own order of variables)."""
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    if env.get("HF_HOME"):
        return os.path.join(env["HF_HOME"], "hub")
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "huggingface", "hub")


def cached_snapshot(repo_id: str, env: Mapping[str, str]) -> Tuple[Optional[str], Optional[str], List[str]]:
    """(snapshot folder, commit, notes) of a repository in the local cache, or (None, None, notes)."""
    root = os.path.join(hub_cache_dir(env), "models--" + repo_id.replace("/", "--"))
    if not os.path.isdir(root):
        return None, None, []
    notes: List[str] = []
    commit = None
    try:
        with open(os.path.join(root, "refs", "main"), encoding="utf-8") as fh:
            commit = fh.read(100).strip()
    except OSError:
        commit = None
    snaps = os.path.join(root, "snapshots")
    if commit and re.match(r"^[0-9a-f]{40}$", commit) and os.path.isdir(os.path.join(snaps, commit)):
        return os.path.join(snaps, commit), commit, notes
    try:
        found = [d for d in os.listdir(snaps) if os.path.isdir(os.path.join(snaps, d))]
    except OSError:
        found = []
    if not found:
        return None, None, ["the cache has %s but no snapshot of it" % repo_id]
    newest = max(found, key=lambda d: os.path.getmtime(os.path.join(snaps, d)))
    notes.append("the cache has no refs/main for %s; read its newest snapshot %s" % (repo_id, newest[:12]))
    return os.path.join(snaps, newest), newest, notes


# ------------------------------------------------------------------------------------------ the Hub

class Hub:
    """Reads JSON files and safetensors headers from the Hub with ``requests`` (range requests only)."""

    def __init__(self, env: Mapping[str, str], timeout: float = 20.0, session: Any = None) -> None:
        import requests

        self.endpoint = (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        self.session = session or requests.Session()
        self.timeout = (min(10.0, timeout), timeout)
        token = env.get("HF_TOKEN") or ""
        self.headers = {"User-Agent": "envdoctor-fit"}
        if token.strip():
            # Sent to the Hub only: requests drops Authorization when a redirect leaves the host (the CDN).
            self.headers["Authorization"] = "Bearer " + token.strip()
        self.has_token = bool(token.strip())

    def url(self, repo_id: str, revision: str, filename: str) -> str:
        from urllib.parse import quote

        return "%s/%s/resolve/%s/%s" % (self.endpoint, repo_id, quote(revision, safe=""), quote(filename))

    def _error(self, status: int, what: str) -> str:
        if status in (401, 403):
            return ("%s: the Hub answered %d (a gated or private repository: accept its licence on the Hub and "
                    "set HF_TOKEN%s)" % (what, status, "; the token given was refused" if self.has_token else ""))
        if status == 404:
            return "%s: not on the Hub (404)" % what
        return "%s: the Hub answered %d" % (what, status)

    def get_json(self, repo_id: str, revision: str, filename: str) -> Tuple[Optional[Any], Optional[str], int]:
        """(document, error, status); a 404 is (None, message, 404)."""
        import requests

        try:
            with self.session.get(self.url(repo_id, revision, filename), headers=self.headers, stream=True,
                                  timeout=self.timeout) as r:
                if r.status_code != 200:
                    return None, self._error(r.status_code, filename), r.status_code
                raw = b""
                for chunk in r.iter_content(65536):
                    raw += chunk
                    if len(raw) > MAX_JSON:
                        return None, "%s is larger than any real one" % filename, 0
        except requests.RequestException as exc:
            return None, "%s: %s" % (filename, _net_reason(exc)), 0
        try:
            return json.loads(raw.decode("utf-8")), None, 200
        except (UnicodeDecodeError, ValueError):
            return None, "%s from the Hub is not JSON" % filename, 0

    def _range(self, url: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start``; reads no more even when the server ignores the range."""
        import requests

        headers = dict(self.headers, Range="bytes=%d-%d" % (start, start + length - 1))
        with self.session.get(url, headers=headers, stream=True, timeout=self.timeout) as r:
            if r.status_code not in (200, 206):
                raise HeaderError(self._error(r.status_code, url.rsplit("/", 1)[-1]))
            if r.status_code == 200 and start:
                # The server sent the whole file from its first byte: skip to the header's start (8 bytes).
                skip = r.raw.read(start, decode_content=True)
                if len(skip) != start:
                    raise HeaderError("the file ends early")
            data = b""
            while len(data) < length:
                chunk = r.raw.read(min(1 << 20, length - len(data)), decode_content=True)
                if not chunk:
                    break
                data += chunk
            if len(data) != length:
                raise HeaderError("the Hub sent %d of the %d header bytes" % (len(data), length))
            return data
        raise requests.RequestException("unreachable")  # pragma: no cover

    def header(self, repo_id: str, revision: str, filename: str) -> List[Tensor]:
        url = self.url(repo_id, revision, filename)
        n = header_length(self._range(url, 0, 8))
        return parse_header(self._range(url, 8, n))


def _net_reason(exc: Exception) -> str:
    text = str(exc)
    for key in ("Name or service not known", "Temporary failure in name resolution", "Connection refused",
                "timed out", "Network is unreachable", "No route to host"):
        if key in text:
            return "cannot reach the Hub (%s)" % key.lower()
    return "cannot reach the Hub (%s)" % type(exc).__name__


def from_hub(repo_id: str, env: Mapping[str, str], timeout: float = 20.0, session: Any = None,
             revision: str = "main") -> ModelSource:
    from concurrent.futures import ThreadPoolExecutor

    import requests

    hub = Hub(env, timeout, session)
    config, err, _ = hub.get_json(repo_id, revision, "config.json")
    if config is None:
        raise ModelError("cannot read %s from %s: %s" % (repo_id, hub.endpoint, err))
    config = _config(config, "config.json of %s" % repo_id)
    notes: List[str] = []
    quant_file, _, _ = hub.get_json(repo_id, revision, "hf_quant_config.json")
    index, err, status = hub.get_json(repo_id, revision, "model.safetensors.index.json")
    shards: List[str] = []
    if index is not None:
        try:
            shards = shards_of_index(index)
        except HeaderError as exc:
            notes.append("model.safetensors.index.json: %s" % exc)
    elif status == 404:
        shards = ["model.safetensors"]
    else:
        notes.append(err or "model.safetensors.index.json could not be read")
    tensors: Optional[List[Tensor]] = None
    if shards:
        try:
            with ThreadPoolExecutor(max_workers=min(8, len(shards))) as pool:
                parts = list(pool.map(lambda s: hub.header(repo_id, revision, s), shards))
            tensors = [t for p in parts for t in p]
        except HeaderError as exc:
            msg = str(exc)
            if "not on the Hub" in msg and shards == ["model.safetensors"]:
                notes.append("no safetensors weights on the Hub for %s (PyTorch .bin or GGUF only?)" % repo_id)
            else:
                notes.append("safetensors headers: %s" % msg)
        except requests.RequestException as exc:
            notes.append("safetensors headers: %s" % _net_reason(exc))
    if tensors is None:
        notes.append("weights computed from the architecture in config.json instead of the safetensors headers")
    return ModelSource(repo_id, "the Hub (%s, revision %s)" % (hub.endpoint, revision), config, tensors,
                       quant_file if isinstance(quant_file, dict) else None, notes, revision)


# ------------------------------------------------------------------------------------------ MODEL

def resolve(model: str, env: Mapping[str, str], online: bool = False, timeout: float = 20.0,
            session: Any = None, paths: bool = True) -> ModelSource:
    """Read MODEL's description (see the module docstring); :class:`ModelError` when nothing can be. ``paths``
    False: MODEL is a Hugging Face id only, never read as a local path (the MCP server's model ids)."""
    path = os.path.expanduser(model)
    if paths and os.path.isdir(path):
        return from_folder(path, model, "the directory %s" % path)
    if paths and os.path.isfile(path):
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.basename(path) == "config.json" or path.endswith(".json"):
            config = _config(_read_json(path, "config file"), path)
            src = ModelSource(model, "the file %s" % path, config)
            files, notes = weight_files(folder) if os.path.basename(path) == "config.json" else (None, [])
            if files:
                src.tensors, more = read_local_headers(files)
                notes += more
            src.notes = notes + ([] if src.tensors is not None else
                                 ["weights computed from the architecture in config.json (no safetensors headers "
                                  "read)"])
            return src
        raise ModelError("%s is not a model directory or a config.json" % path)
    if not HF_ID.match(model):
        raise ModelError("%r is not a directory, a file, or a Hugging Face id (org/name)" % model)
    snap, commit, notes = cached_snapshot(model, env)
    if snap is not None:
        src = from_folder(snap, model, "the Hugging Face cache (%s)" % snap, commit)
        src.notes = notes + src.notes
        if online and src.tensors is None:
            try:
                hub_src = from_hub(model, env, timeout, session, commit or "main")
                hub_src.notes = ["config.json from the cache; headers read from the Hub"] + hub_src.notes
                if hub_src.tensors is not None:
                    src.tensors = hub_src.tensors
                    src.notes = [n for n in src.notes if "instead of the safetensors headers" not in n] + \
                        ["safetensors headers read from the Hub (not in the cache)"]
                else:
                    src.notes += hub_src.notes
            except ModelError as exc:
                src.notes.append("could not read the headers from the Hub: %s" % exc)
        return src
    if not online:
        raise ModelError("%s is not a local directory or file, and not in the Hugging Face cache (%s); "
                         "--online reads its config.json and safetensors headers from the Hub (nothing else is "
                         "downloaded)" % (model, hub_cache_dir(env)))
    if env.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise ModelError("%s is not in the Hugging Face cache (%s), and HF_HUB_OFFLINE is set: the Hub is not "
                         "asked" % (model, hub_cache_dir(env)))
    return from_hub(model, env, timeout, session)
