"""MultiModeAgent: one entry point for the three ways an agent can run: ``loop`` (one
tool-calling loop, a SimpleAgent), ``plan`` (full planning, an Agent) and ``multi-agent``
(a team over a shared board, a TeamExecutor).
Memory is mode-independent: every mode goes through ``context.memory``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal, TypedDict, get_args

from memstack._json import JSON, JSONObject
from memstack.agents.agent import Agent
from memstack.agents.durable import DurableMemory, MemoryServiceBinding
from memstack.agents.plan import Task, TaskPlan
from memstack.agents.simple import SimpleAgent
from memstack.agents.team import TeamExecutor, TeamMember
from memstack.context import ProcessingContext
from memstack.errors import InvalidInput
from memstack.longterm.memory import LongTermMemory
from memstack.providers.base import ChatModel
from memstack.tools import Tool

__all__ = ["DEFAULT_TEAM", "AgentMode", "MultiModeAgent"]

AgentMode = Literal["loop", "plan", "multi-agent"]
_MODES: Final = get_args(AgentMode)

DEFAULT_TEAM: Final = (
    TeamMember(name="lead", role="lead: breaks the objective into tasks and checks the results"),
    TeamMember(name="worker", role="worker: claims open tasks and does them thoroughly"),
)


class _Shared(TypedDict):
    """The settings the ``loop`` runner (a SimpleAgent) and the ``plan`` one (an Agent)
    both take."""

    name: str
    objective: str
    provider: ChatModel
    model: str
    tools: Sequence[Tool]
    system_prompt: str
    output_schema: JSONObject | None
    long_term_memory: LongTermMemory | None
    auto_persist_memory: bool
    memory_store: MemoryServiceBinding | None
    skills: Sequence[str] | None
    skill_dirs: Sequence[Path | str]
    env: Mapping[str, str] | None


def _check_mode(mode: object) -> None:
    if mode not in _MODES:
        raise InvalidInput(f"mode must be one of {', '.join(_MODES)}, not {mode!r}.", field="mode")


def _planner(
    shared: _Shared,
    max_step_iterations: int,
    task: Task | TaskPlan | None,
    inputs: Mapping[str, object] | None,
    workspace: Path | str | None,
) -> Agent:
    """The ``plan`` runner: an Agent, with the settings only planning uses."""
    return Agent(
        **shared,
        max_step_iterations=max_step_iterations,
        task=task,
        inputs=inputs,
        workspace=workspace,
    )


class MultiModeAgent:
    def __init__(
        self,
        *,
        name: str,
        objective: str,
        provider: ChatModel,
        model: str,
        mode: AgentMode = "loop",
        tools: Sequence[Tool] = (),
        system_prompt: str = "",
        output_schema: JSONObject | None = None,
        max_step_iterations: int = 5,
        task: Task | TaskPlan | None = None,
        inputs: Mapping[str, object] | None = None,
        members: Sequence[TeamMember] = DEFAULT_TEAM,
        max_rounds: int = 8,
        long_term_memory: LongTermMemory | None = None,
        auto_persist_memory: bool = False,
        memory_store: MemoryServiceBinding | None = None,
        skills: Sequence[str] | None = None,
        skill_dirs: Sequence[Path | str] = (),
        workspace: Path | str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        _check_mode(mode)
        self.mode = mode
        self.system_prompt = system_prompt
        self.durable = DurableMemory(
            long_term=long_term_memory, auto_persist=auto_persist_memory, store=memory_store
        )
        shared = _Shared(
            name=name,
            objective=objective,
            provider=provider,
            model=model,
            tools=tools,
            system_prompt=system_prompt,
            output_schema=output_schema,
            long_term_memory=long_term_memory,
            auto_persist_memory=auto_persist_memory,
            memory_store=memory_store,
            skills=skills,
            skill_dirs=skill_dirs,
            env=env,
        )
        self.runner: SimpleAgent | Agent | None = None
        self.team: TeamExecutor | None = None
        if mode == "loop":
            self.runner = SimpleAgent(**shared, max_iterations=max_step_iterations)
        elif mode == "plan":
            self.runner = _planner(shared, max_step_iterations, task, inputs, workspace)
        else:
            self.team = self._team(shared, members, max_rounds, max_step_iterations)

    def _team(
        self,
        shared: _Shared,
        members: Sequence[TeamMember],
        max_rounds: int,
        max_step_iterations: int,
    ) -> TeamExecutor:
        """A team takes no memory settings: it gets the durable memory as tools, and
        ``execute`` adds its prompt and persists the results."""
        return TeamExecutor(
            objective=shared["objective"],
            members=members,
            provider=shared["provider"],
            model=shared["model"],
            tools=[*shared["tools"], *self.durable.tools()],
            max_rounds=max_rounds,
            max_step_iterations=max_step_iterations,
            system_prompt=shared["system_prompt"],
        )

    async def execute(self, context: ProcessingContext) -> AsyncIterator[object]:
        if self.runner is not None:
            async for message in self.runner.execute(context):
                yield message
            return
        assert self.team is not None
        self.team.system_prompt = await self.durable.system_prompt(
            self.team.objective, self.system_prompt
        )
        async for message in self.team.execute(context):
            yield message
        await self.durable.persist(self.team.objective, self.get_results())

    def get_results(self) -> JSON:
        """``loop`` / ``plan``: the agent's result; ``multi-agent``: completed board task
        ids mapped to their results."""
        if self.runner is not None:
            return self.runner.get_results()
        assert self.team is not None
        return dict(self.team.get_results())
