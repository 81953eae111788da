"""``envdoctor fit``'s model reader: safetensors headers (synthetic, header-only files), local directories, the
Hugging Face cache layout, the Hub through a loopback server (range reads only), and no network at all."""

from __future__ import annotations

import json
import os
import socket
import struct

import pytest

from envdoctor.fit import safetensors as st
from envdoctor.fit import source
from envdoctor.fit.arch import Arch
from envdoctor.fit.core import Options, compute
from envdoctor.fit.gpu import from_product
from envdoctor.fit.memory import weights_from_config, weights_from_headers
from envdoctor.fit.quant import Quant
from tests import fitdata
from tests.loopback import Server

COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"

# ------------------------------------------------------------------------------------------ headers


def test_header_is_read_without_the_weights(tmp_path):
    cfg = fitdata.tiny_llama()
    folder = fitdata.write_model(str(tmp_path / "m"), cfg, [fitdata.llama_tensors(cfg)])
    tensors = st.read_file_header(os.path.join(folder, "model.safetensors"))
    assert len(tensors) == 2 * 9 + 2  # tied embeddings: no lm_head
    assert tensors[0].name == "model.embed_tokens.weight" and tensors[0].shape == [128256, 2048]
    # the file holds nothing past its header, and that is all envdoctor needs
    assert os.path.getsize(os.path.join(folder, "model.safetensors")) < 8 + 10000


def test_weights_from_headers_equal_dtype_times_shape(tmp_path):
    cfg = fitdata.tiny_llama()
    tensors = [st.Tensor(n, d, s) for n, d, s in fitdata.llama_tensors(cfg)]
    arch = Arch(cfg)
    total, parts, _ = weights_from_headers(tensors, arch, Quant(), 1, 2)
    assert total == sum(t.numel for t in tensors) * 2
    # the config's arithmetic counts the same parameters
    assert arch.parameters() == sum(t.numel for t in tensors)
    cfg_total, _ = weights_from_config(arch, Quant(), 1, 2)
    assert cfg_total == total


def test_tensor_parallel_sharding_replicates_what_vllm_replicates():
    cfg = fitdata.tiny_llama()  # 8 KV heads
    arch = Arch(cfg)
    tensors = [st.Tensor(n, d, s) for n, d, s in fitdata.llama_tensors(cfg)]
    one, _, _ = weights_from_headers(tensors, arch, Quant(), 1, 2)
    two, _, _ = weights_from_headers(tensors, arch, Quant(), 2, 2)
    norms = sum(t.numel for t in tensors if "norm" in t.name) * 2
    assert two == pytest.approx((one - norms) / 2 + norms)
    # 16 GPUs > 8 KV heads: every GPU keeps one KV head's k/v projection (a replica), not 1/16 of them
    sixteen, _, _ = weights_from_headers(tensors, arch, Quant(), 16, 2)
    kv = sum(t.numel for t in tensors if ".k_proj." in t.name or ".v_proj." in t.name) * 2
    assert sixteen == pytest.approx((one - norms - kv) / 16 + norms + kv / 8)
    assert weights_from_config(arch, Quant(), 16, 2)[0] == pytest.approx(sixteen, rel=1e-3)


@pytest.mark.parametrize("raw, why", [
    (b"\x01\x02", "shorter than the 8-byte length prefix"),
    (struct.pack("<Q", 2 ** 40), "over the format's limit"),
    (struct.pack("<Q", 5) + b"{oops", "not JSON"),
    (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
])
def test_garbage_headers_are_refused_with_the_reason(tmp_path, raw, why):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(raw)
    with pytest.raises(st.HeaderError) as e:
        st.read_file_header(str(p))
    assert why in str(e.value)


def test_impossible_dtype_shape_or_offsets_are_refused():
    with pytest.raises(st.HeaderError, match="unknown dtype"):
        st.parse_header(json.dumps({"w": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 2]}}).encode())
    with pytest.raises(st.HeaderError, match="impossible shape"):
        st.parse_header(json.dumps({"w": {"dtype": "F16", "shape": [-1], "data_offsets": [0, 2]}}).encode())
    with pytest.raises(st.HeaderError, match="offsets span"):
        st.parse_header(json.dumps({"w": {"dtype": "F16", "shape": [4], "data_offsets": [0, 2]}}).encode())


def test_a_truncated_header_is_refused(tmp_path):
    raw = fitdata.header_bytes([("w", "BF16", [4, 4])])
    p = tmp_path / "cut.safetensors"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(st.HeaderError, match="ends inside its header"):
        st.read_file_header(str(p))


# ------------------------------------------------------------------------------------------ local folders


def test_sharded_checkpoint_is_read_through_its_index(tmp_path):
    cfg = fitdata.tiny_llama()
    tensors = fitdata.llama_tensors(cfg)
    folder = fitdata.write_model(str(tmp_path / "m"), cfg, [tensors[:8], tensors[8:]])
    src = source.resolve(folder, {})
    assert src.tensors is not None and len(src.tensors) == len(tensors)
    assert src.notes == []


def test_a_partial_download_is_said_and_the_architecture_used(tmp_path):
    cfg = fitdata.tiny_llama()
    tensors = fitdata.llama_tensors(cfg)
    folder = fitdata.write_model(str(tmp_path / "m"), cfg, [tensors[:8], tensors[8:]])
    os.remove(os.path.join(folder, "model-00002-of-00002.safetensors"))
    src = source.resolve(folder, {})
    assert src.tensors is None
    assert any("1 of the 2 safetensors shards are not here" in n for n in src.notes)
    assert any("computed from the architecture" in n for n in src.notes)


def test_pickle_weights_are_not_opened(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(fitdata.tiny_llama()))
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04 would run code if unpickled")
    src = source.resolve(str(folder), {})
    assert src.tensors is None
    assert any(".bin files, which envdoctor does not open" in n for n in src.notes)


def test_mistral_consolidated_file_is_not_counted_twice(tmp_path):
    cfg = fitdata.tiny_llama()
    folder = fitdata.write_model(str(tmp_path / "m"), cfg, [fitdata.llama_tensors(cfg)])
    with open(os.path.join(folder, "consolidated.safetensors"), "wb") as fh:
        fh.write(fitdata.header_bytes([("tok_embeddings.weight", "BF16", [128256, 2048])]))
    src = source.resolve(folder, {})
    assert len(src.tensors or []) == len(fitdata.llama_tensors(cfg))


def test_a_config_json_path(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(fitdata.config("Qwen--Qwen3-8B")))
    src = source.resolve(str(p), {})
    assert src.config["model_type"] == "qwen3" and src.tensors is None
    assert any("no safetensors headers read" in n for n in src.notes)


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "\x00\xff"])
def test_unreadable_config_is_a_clear_error(tmp_path, text):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(source.ModelError) as e:
        source.resolve(str(folder), {})
    assert "config.json" in str(e.value)


# ------------------------------------------------------------------------------------------ the HF cache


def hf_cache(root, repo_id: str, cfg, tensors=None, refs=True) -> str:
    """A cache laid out as huggingface_hub writes it: blobs, snapshots/COMMIT/ links, refs/main."""
    commit = COMMIT
    base = root / ("models--" + repo_id.replace("/", "--"))
    blobs, snap = base / "blobs", base / "snapshots" / commit
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    files = {"config.json": json.dumps(cfg).encode()}
    if tensors is not None:
        files["model.safetensors"] = fitdata.header_bytes(tensors)
    for i, (name, data) in enumerate(files.items()):
        (blobs / ("blob%d" % i)).write_bytes(data)
        os.symlink(os.path.join("..", "..", "blobs", "blob%d" % i), str(snap / name))
    if refs:
        (base / "refs").mkdir()
        (base / "refs" / "main").write_text(commit)
    return commit


def test_hf_id_found_in_hf_home(tmp_path):
    cfg = fitdata.tiny_llama()
    commit = hf_cache(tmp_path / "hub", "meta-llama/Llama-3.2-1B-Instruct", cfg, fitdata.llama_tensors(cfg))
    src = source.resolve("meta-llama/Llama-3.2-1B-Instruct", {"HF_HOME": str(tmp_path)})
    assert src.revision == commit and src.tensors is not None
    assert "Hugging Face cache" in src.where


def test_hf_hub_cache_wins_and_a_missing_ref_is_said(tmp_path):
    hf_cache(tmp_path / "elsewhere", "Qwen/Qwen3-8B", fitdata.config("Qwen--Qwen3-8B"), refs=False)
    src = source.resolve("Qwen/Qwen3-8B", {"HF_HUB_CACHE": str(tmp_path / "elsewhere"),
                                           "HF_HOME": str(tmp_path / "nothing")})
    assert src.config["num_hidden_layers"] == 36
    assert any("no refs/main" in n for n in src.notes)
    assert any("weights computed from the architecture" in n for n in src.notes)


def test_not_cached_and_offline_says_what_to_do(tmp_path):
    with pytest.raises(source.ModelError) as e:
        source.resolve("meta-llama/Llama-3.1-8B", {"HF_HOME": str(tmp_path)})
    msg = str(e.value)
    assert "not in the Hugging Face cache" in msg and str(tmp_path / "hub") in msg and "--online" in msg


# ------------------------------------------------------------------------------------------ the Hub


@pytest.fixture
def hub():
    cfg = fitdata.tiny_llama()
    tensors = fitdata.llama_tensors(cfg)
    shard1, shard2 = fitdata.header_bytes(tensors[:8]), fitdata.header_bytes(tensors[8:])
    # each shard followed by "weights" that must never be read
    body1, body2 = shard1 + b"\xaa" * 200000, shard2 + b"\xbb" * 200000
    index = {"metadata": {}, "weight_map": dict([(t[0], "model-00001-of-00002.safetensors") for t in tensors[:8]] +
                                                [(t[0], "model-00002-of-00002.safetensors") for t in tensors[8:]])}
    files = {}
    for rev in ("main", COMMIT):  # the Hub resolves a branch or a commit alike
        base = "/org/tiny/resolve/%s/" % rev
        files.update({base + "config.json": json.dumps(cfg).encode(),
                      base + "model.safetensors.index.json": json.dumps(index).encode(),
                      base + "model-00001-of-00002.safetensors": body1,
                      base + "model-00002-of-00002.safetensors": body2})
    srv = Server(files, lifetime=30)
    yield srv, len(tensors), len(shard1), len(shard2)
    srv.close()


def test_online_reads_config_and_headers_by_range_only(hub, tmp_path):
    srv, n, h1, h2 = hub
    src = source.resolve("org/tiny", {"HF_ENDPOINT": srv.url, "HF_HOME": str(tmp_path)}, online=True)
    assert src.tensors is not None and len(src.tensors) == n
    ranges = srv.ranges("main/model-00001-of-00002.safetensors")
    assert ranges == ["bytes=0-7", "bytes=8-%d" % (h1 - 1)]
    # not one byte of the weights left the server
    assert srv.sent["/org/tiny/resolve/main/model-00001-of-00002.safetensors"] == h1
    assert srv.sent["/org/tiny/resolve/main/model-00002-of-00002.safetensors"] == h2


def test_a_server_ignoring_ranges_is_read_no_further_than_the_header(hub, tmp_path):
    srv, n, _, _ = hub
    srv.ignore_ranges = True
    src = source.resolve("org/tiny", {"HF_ENDPOINT": srv.url, "HF_HOME": str(tmp_path)}, online=True)
    assert src.tensors is not None and len(src.tensors) == n


def test_hf_token_is_sent_and_never_shown(hub, tmp_path):
    srv, _, _, _ = hub
    token = "hf_secretTOKEN1234567890"
    src = source.resolve("org/tiny", {"HF_ENDPOINT": srv.url, "HF_TOKEN": token, "HF_HOME": str(tmp_path)},
                         online=True)
    assert all(r["authorization"] == "Bearer " + token for r in srv.requests)
    assert token not in json.dumps(src.to_dict())


def test_gated_model_says_how_to_get_in(hub, tmp_path):
    srv, _, _, _ = hub
    srv.fail("/org/tiny/resolve/main/config.json", "401")
    with pytest.raises(source.ModelError) as e:
        source.resolve("org/tiny", {"HF_ENDPOINT": srv.url, "HF_HOME": str(tmp_path)}, online=True)
    assert "gated or private" in str(e.value) and "HF_TOKEN" in str(e.value)


def test_hub_without_safetensors_falls_back_to_the_architecture(tmp_path):
    srv = Server({"/org/binonly/resolve/main/config.json": json.dumps(fitdata.tiny_llama()).encode()}, lifetime=30)
    try:
        src = source.resolve("org/binonly", {"HF_ENDPOINT": srv.url, "HF_HOME": str(tmp_path)}, online=True)
    finally:
        srv.close()
    assert src.tensors is None
    assert any("no safetensors weights on the Hub" in n for n in src.notes)


def test_cached_config_with_online_headers(hub, tmp_path):
    srv, n, _, _ = hub
    hf_cache(tmp_path / "hub", "org/tiny", fitdata.tiny_llama())
    src = source.resolve("org/tiny", {"HF_ENDPOINT": srv.url, "HF_HOME": str(tmp_path)}, online=True)
    assert src.tensors is not None and len(src.tensors) == n
    assert any("read from the Hub" in x for x in src.notes)


def test_no_network_local_models_work_and_online_says_it_could_not_reach(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    cfg = fitdata.tiny_llama()
    folder = fitdata.write_model(str(tmp_path / "m"), cfg, [fitdata.llama_tensors(cfg)])
    res = compute(source.resolve(folder, {}), from_product("RTX 4090"), Options(context=8192))
    assert res.fits and res.weights_bytes > 0
    with pytest.raises(source.ModelError) as e:
        source.resolve("org/elsewhere", {"HF_HOME": str(tmp_path), "HF_ENDPOINT": "https://huggingface.co"},
                       online=True)
    assert "cannot reach the Hub" in str(e.value)


def test_hf_hub_offline_is_honoured(tmp_path):
    with pytest.raises(source.ModelError, match="HF_HUB_OFFLINE"):
        source.resolve("org/x", {"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}, online=True)
