// The node's load: the encoders give up complexity as it rises, and above LOAD_THRESHOLD the node
// takes no new calls (admission) while other nodes are offered them (the heartbeat's load).
// Unset, the threshold steers calls to other nodes but refuses none that no other node takes.
import type { Config } from '../config/env.js';
import { EncoderComplexity } from '../media/encoderComplexity.js';
import { EventLoopWatch } from '../observability/eventLoop.js';
import type { Metrics } from '../observability/metrics.js';
import { DEFAULT_LOAD_THRESHOLD, NodeLoad } from '../observability/nodeLoad.js';
import type { ReadinessChecks } from '../observability/readiness.js';
import type { Teardown } from '../system/teardown.js';
import { Listeners, type Log } from './types.js';

export interface LoadPart {
  nodeLoad: NodeLoad;
  encoderComplexity: EncoderComplexity;
  /** Called when the node stops or starts taking calls (the heartbeat registers here, to tell the other nodes at once). */
  turned: Listeners<[]>;
  /** The node's calls, for the load's projection: the admission registers its count here (none: 0). */
  countCalls(count: () => number): void;
}

export function startLoad(config: Config, deps: { metrics: Metrics; readiness: ReadinessChecks; log: Log }, teardown: Teardown): LoadPart {
  const { metrics, readiness, log } = deps;
  const eventLoop = new EventLoopWatch(config.EVENT_LOOP_LAG_DEGRADED_MS, metrics.eventLoopLag);
  teardown.add('event loop watch', () => eventLoop.stop());
  readiness.register('event_loop', eventLoop);
  const loadThreshold = config.LOAD_THRESHOLD ?? DEFAULT_LOAD_THRESHOLD;
  const encoderComplexity = new EncoderComplexity({ max: config.OPUS_COMPLEXITY, min: config.OPUS_MIN_COMPLEXITY, threshold: loadThreshold });
  metrics.loadThreshold.set(loadThreshold);
  metrics.maxConcurrentCalls.set(config.MAX_CONCURRENT_CALLS);
  metrics.opusComplexity.set(encoderComplexity.current);
  const turned = new Listeners<[]>();
  let wasAccepting = true;
  let callsNow = () => 0;
  const nodeLoad: NodeLoad = new NodeLoad({
    threshold: loadThreshold,
    operatorSet: config.LOAD_THRESHOLD !== undefined,
    calls: () => callsNow(),
    loopLagMs: () => eventLoop.worstDelayMs,
    onSample: (load) => {
      metrics.nodeLoad.set(load);
      metrics.opusComplexity.set(encoderComplexity.observe(load));
      const accepting = nodeLoad.overloaded === undefined;
      if (accepting !== wasAccepting) {
        wasAccepting = accepting;
        log.warn({ load: Number(load.toFixed(2)), threshold: loadThreshold }, accepting ? 'load back under the threshold: taking new calls again' : 'load above the threshold: new calls go to other nodes');
        turned.call();
      }
    },
  });
  teardown.add('node load', () => nodeLoad.stop());
  readiness.register('load', nodeLoad);
  return {
    nodeLoad,
    encoderComplexity,
    turned,
    countCalls: (count) => {
      callsNow = count;
    },
  };
}
