"""The HTTP API over the plan store: native `/v1` endpoints and YARN's reservation REST dialect.

`create_app(state, tokens)` (planner/api/app.py) builds the FastAPI application; `rayon serve`
(planner/cli/serve.py) serves it on uvicorn (planner/api/server.py). The user's guide is docs/api.md.
"""
