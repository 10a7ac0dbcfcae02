import type { ParameterizedContext } from 'koa';
import { SerializedAnswer } from '../shared/usecases/search.js';

/** Sets the response body to a use case's answer: an object (Koa serialises it) or JSON bytes made beforehand. */
export function sendAnswer(ctx: ParameterizedContext, answer: object): void {
  if (answer instanceof SerializedAnswer) {
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = answer.json;
  } else ctx.body = answer;
}
