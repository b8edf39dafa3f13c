"""scripts/leak_test.py, the leak test a team runs on its own wiki and users file: it must pass on a correct
server, and name the leak when one is there. Fakes: conftest's llama-embedding, fake_server.py's llama-server.
"""
from conftest import run_script
from fake_server import FakeLlamaServer
from rag.store import users


def test_the_leak_test_passes_and_counts_every_door(small_wiki, fake_embedding, tmp_path):
    path = tmp_path / "users.toml"
    users.add_user(str(path), "kollegin", ["it"])
    with FakeLlamaServer(answer=["Siehe", " [1]."]) as fake:
        result = run_script("scripts/leak_test.py", "--wiki", small_wiki, "--users", path,
                            env={**fake_embedding, "LLAMA_SERVER_URL": fake.url})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Vorher: 153 Antworten an 3 Benutzer ohne Recht, 0 mit Kanarien-Bytes")
    assert "3 von 3 Kanarien-Zahlen gefunden" in lines[0]
    assert lines[1].startswith("Nach Regeländerung: 102 Antworten an 2 Benutzer ohne Recht, 0 mit Kanarien-Bytes")
    assert "6 von 6 Kanarien-Zahlen gefunden" in lines[1] and lines[-1].startswith("Leck-Test bestanden")


def test_a_leak_is_named_and_fails(small_wiki, fake_embedding, tmp_path):
    (small_wiki / "offen.md").write_text("# Geheimprojekt\n\nDas Geheimprojekt Rubumido (Kanarienwort von --seed 30) ist offen.\n")
    with FakeLlamaServer(answer=["Siehe", " [1]."]) as fake:
        result = run_script("scripts/leak_test.py", "--wiki", small_wiki, "--seed", "30",
                            env={**fake_embedding, "LLAMA_SERVER_URL": fake.url})
    print(result.stdout)
    assert result.returncode == 1 and "LECK: leak-ohne" in result.stdout and "NICHT bestanden" in result.stdout
