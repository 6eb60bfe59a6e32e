"""The peer benchmark (bench/peer.py): the cards that put llama-cpp-python's server behind the
default study, and its page's goal table (the servers themselves run only in the benchmark)."""

from __future__ import annotations

from bench.peer import peer_cards, render
from cyoa.generation import load_model_cards


def test_the_peer_s_cards_name_the_packaged_models_with_their_sampling_on_their_servers(tmp_path):
    packaged = load_model_cards("models")
    cards = load_model_cards(
        peer_cards(tmp_path / "cards", {name: 9000 + i for i, name in enumerate(sorted(packaged))})
    )
    assert sorted(cards) == sorted(packaged)
    for name, card in cards.items():
        assert card.backend == "openai" and card.sampling == packaged[name].sampling
        assert card.options["base_url"].startswith("http://127.0.0.1:900")
        assert packaged[name].weights_file in card.version


def summary(both: float, first: float, rate: float, p95: float, rss: int) -> dict:
    runs = {
        "1": {"summary": {"both_p50_s": both, "first_token_p50_s": first, "peak_rss_mb": rss}},
        "16": {"summary": {"suggestions_per_s": rate, "both_p95_s": p95, "peak_rss_mb": rss}},
    }
    return {"runs": runs}


def test_the_page_compares_the_medians_of_the_sittings_with_the_goals():
    cyoa = [summary(0.4, 0.09, 5.0, 1.5, 900), summary(0.6, 0.11, 4.0, 1.9, 950)]
    peer = [summary(1.0, 0.2, 2.0, 5.0, 300), summary(1.0, 0.2, 3.0, 6.0, 320)]
    for result in peer:
        result["servers_peak_rss_mb"] = 400
    results = {
        "command": "python bench/peer.py",
        "finished": "2026-12-01 23:00",
        "machine": {"cpus": 2, "memory_gb": 23.5, "python": "3.11.7"},
        "cpu_features": "AVX2 = 1",
        "load_average_start": [1, 1, 1],
        "load_average_end": [1, 1, 1],
        "rounds": 3,
        "sittings": [
            {"label": label, "result": result}
            for pair in zip(cyoa, peer, strict=True)
            for label, result in zip(("cyoa", "peer"), pair, strict=True)
        ],
    }
    page = render(results)
    assert "| 1 writer: both suggestions p50 (s) | 0.4 / 0.6 | 1.0 / 1.0 |" in page
    assert "≤ 0.8 × the peer's | 0.50× (0.5 s against 1.0 s)" in page
    assert "≥ 1.5 × the peer's | 1.80× (4.5 against 2.5)" in page
    assert "| 900 / 950 | 700 / 720 (app + servers) |" in page
    assert "≤ 1.0 GB | 950 MB |" in page
