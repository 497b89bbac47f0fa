"""The agent runtime with working memory wired in: tasks and
steps, the planner, the step/task/parallel executors, agents, teams, skills and
built-in tools."""

from memstack.agents.agent import Agent, AgentMessage
from memstack.agents.agent_step import AgentStepExecutor, WorkflowNode
from memstack.agents.builtin import builtin_tools
from memstack.agents.durable import MemoryServiceBinding
from memstack.agents.finish_step import FINISH_STEP, FinishStepTool
from memstack.agents.messages import (
    Chunk,
    ProcessingMessage,
    StepResult,
    TaskUpdate,
    ToolCallUpdate,
    ToolResult,
)
from memstack.agents.multi_mode import AgentMode, MultiModeAgent
from memstack.agents.parallel import ParallelTaskExecutor
from memstack.agents.plan import Step, StepMode, Task, TaskPlan
from memstack.agents.planner import PlanningError, PlanningUpdate, TaskPlanner, plan_of
from memstack.agents.runner import StepRunner
from memstack.agents.simple import AgentExecutor, SimpleAgent
from memstack.agents.skills import Skill, discover_skills, skills_section
from memstack.agents.step_executor import StepExecutor, estimate_tokens
from memstack.agents.task_executor import TaskExecutor
from memstack.agents.team import (
    BoardTask,
    MessageBus,
    TaskBoard,
    TeamExecutor,
    TeamMember,
)

__all__ = [
    "FINISH_STEP",
    "Agent",
    "AgentExecutor",
    "AgentMessage",
    "AgentMode",
    "AgentStepExecutor",
    "BoardTask",
    "Chunk",
    "FinishStepTool",
    "MemoryServiceBinding",
    "MessageBus",
    "MultiModeAgent",
    "ParallelTaskExecutor",
    "PlanningError",
    "PlanningUpdate",
    "ProcessingMessage",
    "SimpleAgent",
    "Skill",
    "Step",
    "StepExecutor",
    "StepMode",
    "StepResult",
    "StepRunner",
    "Task",
    "TaskBoard",
    "TaskExecutor",
    "TaskPlan",
    "TaskPlanner",
    "TaskUpdate",
    "TeamExecutor",
    "TeamMember",
    "ToolCallUpdate",
    "ToolResult",
    "WorkflowNode",
    "builtin_tools",
    "discover_skills",
    "estimate_tokens",
    "plan_of",
    "skills_section",
]
