// Kept for the current voice agent until it moves to the turn detector (src/agent/turn/).
export { WebRtcVad } from '../turn/webrtc.js';
