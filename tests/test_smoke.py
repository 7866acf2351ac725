def test_create_and_get(api):
    r = api.post("/v1/polls", {"title": "Dinner", "kind": "date", "options": [{"date": "2026-12-01"}]})
    assert r.status_code == 201
    r2 = api.get(f"/v1/polls/{r.body['data']['id']}")
    assert r2.body == r.body


def test_unauthenticated(anon):
    r = anon.get("/v1/polls")
    assert r.status_code == 401
