"""A model for the Agents SDK's runner that answers with set texts and records its input
(this project's own, for the SpoolSession tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
)


def text_message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg-1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        status="completed",
    )


class FakeModel(Model):
    """Answers each turn with the outputs set by `set_next_output`."""

    def __init__(self) -> None:
        self.next_output: list[Any] = []
        self.inputs: list[Any] = []

    def set_next_output(self, output: list[Any]) -> None:
        self.next_output = output

    @property
    def last_input(self) -> Any:
        return self.inputs[-1]

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        self.inputs.append(input)
        return ModelResponse(output=self.next_output, usage=Usage(), response_id=None)

    async def stream_response(self, system_instructions, input, *args, **kwargs) -> AsyncIterator[Any]:
        self.inputs.append(input)
        response = Response(
            id="resp-1",
            created_at=0,
            model="fake",
            object="response",
            output=self.next_output,
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=0)
