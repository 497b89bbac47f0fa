"""Multi-agent teams: a TaskBoard and a MessageBus shared by several agents, run by
TeamExecutor, with completed board tasks mirrored into working memory."""

from memstack.agents.team.board import (
    BoardEvent,
    BoardEventType,
    BoardStatus,
    BoardTask,
    TaskBoard,
    TaskSpec,
)
from memstack.agents.team.bus import BROADCAST, MessageBus, TeamMessage
from memstack.agents.team.executor import (
    DEFAULT_MAX_ROUNDS,
    TaskSeed,
    TeamExecutor,
    mirror_completions,
)
from memstack.agents.team.members import TeamMember
from memstack.agents.team.prompts import SHARED_MEMORY_PROMPT, TASK_BOARD_PROMPT
from memstack.agents.team.tools import TEAM_TOOL_NAMES, team_tools

__all__ = [
    "BROADCAST",
    "DEFAULT_MAX_ROUNDS",
    "SHARED_MEMORY_PROMPT",
    "TASK_BOARD_PROMPT",
    "TEAM_TOOL_NAMES",
    "BoardEvent",
    "BoardEventType",
    "BoardStatus",
    "BoardTask",
    "MessageBus",
    "TaskBoard",
    "TaskSeed",
    "TaskSpec",
    "TeamExecutor",
    "TeamMember",
    "TeamMessage",
    "mirror_completions",
    "team_tools",
]
