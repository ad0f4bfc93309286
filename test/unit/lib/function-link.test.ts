/** The function-hop setting of `up` (lib/function-link.ts): the link unless HTTP is asked for; a typo is refused. */
import test from 'ava';
import { functionHopOf } from '../../../lib/function-link.js';

test('an unset or empty CORNSERVE_FUNCTION_HOP means the link', (t) => {
  t.is(functionHopOf(undefined), 'link');
  t.is(functionHopOf(''), 'link');
});

test('CORNSERVE_FUNCTION_HOP=http or link is taken as it is', (t) => {
  t.is(functionHopOf('http'), 'http');
  t.is(functionHopOf('link'), 'link');
});

test('any other CORNSERVE_FUNCTION_HOP is refused, naming the choices', (t) => {
  t.throws(() => functionHopOf('grpc'), { message: /CORNSERVE_FUNCTION_HOP must be one of link, http, got "grpc"/ });
});
