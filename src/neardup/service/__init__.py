"""neardup as an HTTP service: FastAPI on uvicorn over a durable index (``neardup serve``).

Needs the ``service`` extra (``pip install neardup[service]``): fastapi, uvicorn.
"""
