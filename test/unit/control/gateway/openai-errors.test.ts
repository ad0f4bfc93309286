import test from 'ava';
import { ValidationError } from '../../../../functions/sdk/index.js';
import { toOpenAIError } from '../../../../control/gateway/routes/openai.js';

test('a field that fails validation is named by its OpenAI path, without the request_data wrapper', (t) => {
  const { status, body } = toOpenAIError(new ValidationError('request_data', [{ path: 'max_tokens', message: 'Too small: expected number to be >0' }]));
  t.is(status, 400);
  t.is(body.error.message, 'max_tokens: Too small: expected number to be >0');
  t.is(body.error.param, 'max_tokens');
});
