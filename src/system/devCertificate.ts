// TLS for development: a local certificate authority and a certificate it signs for this machine
// (127.0.0.1, ::1, localhost). Clients trust the CA (NODE_EXTRA_CA_CERTS, a browser's store), so
// the server's certificate is checked as in production rather than accepted blindly. Node's crypto
// cannot sign certificates: the openssl program does.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { onPath } from './commands.js';

export interface DevCertificate {
  /** The CA's certificate: what clients trust. */
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** What a development certificate is for: the addresses and the name a local client dials. */
const SUBJECT_ALT_NAME = 'IP:127.0.0.1,IP:::1,DNS:localhost';
/** The longest validity browsers accept for a certificate (825 days); the CA lasts as long. */
const DAYS = '825';

/** Writes ca.pem, cert.pem and key.pem (ca-key.pem too, its private keys mode 0600) into `dir`, replacing what was there. */
export function makeDevCertificate(dir: string): DevCertificate {
  if (!onPath('openssl')) throw new Error('the openssl program is needed to sign the certificate and is not on PATH (Debian: apt-get install openssl)');
  const at = (name: string) => join(resolve(dir), name);
  // A directory made here is its owner's only: openssl writes the keys before they are set to 0600.
  mkdirSync(resolve(dir), { recursive: true, mode: 0o700 });
  const files = { caFile: at('ca.pem'), caKey: at('ca-key.pem'), certFile: at('cert.pem'), keyFile: at('key.pem'), request: at('cert.csr'), extensions: at('cert.ext') };
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  try {
    openssl(['req', '-x509', ...ecKey, '-keyout', files.caKey, '-out', files.caFile, '-days', DAYS, '-subj', '/CN=Parley development CA']);
    openssl(['req', '-new', ...ecKey, '-keyout', files.keyFile, '-out', files.request, '-subj', '/CN=localhost']);
    writeFileSync(files.extensions, `subjectAltName=${SUBJECT_ALT_NAME}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`);
    openssl(['x509', '-req', '-in', files.request, '-CA', files.caFile, '-CAkey', files.caKey, '-set_serial', `0x${Date.now().toString(16)}`, '-days', DAYS, '-extfile', files.extensions, '-out', files.certFile]);
  } finally {
    rmSync(files.request, { force: true });
    rmSync(files.extensions, { force: true });
  }
  for (const key of [files.caKey, files.keyFile]) chmodSync(key, 0o600);
  return { caFile: files.caFile, certFile: files.certFile, keyFile: files.keyFile };
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
    throw new Error(`openssl ${args[0]} failed: ${stderr || (err as Error).message}`);
  }
}
