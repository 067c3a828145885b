"""Alembic environment: runs migrations on the engine handed over by ingest.store.db."""

from alembic import context
from sqlmodel import SQLModel

from ingest.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)

target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = context.config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=connection.dialect.name == "sqlite"
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
