"""The memory server: a REST API over the memory service (``memstack serve``)."""

from memstack.server.app import create_app
from memstack.server.services import Services, open_services
from memstack.server.settings import ServerSettings

__all__ = ["ServerSettings", "Services", "create_app", "open_services"]
