// A self-signed certificate for 127.0.0.1 (or a host name) made with openssl, for servers that serve TLS in tests.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Writes `cert.pem` and `key.pem` into `dir`: a certificate for IP 127.0.0.1 (or for host name `name`) valid one day. */
export function makeCertificate(dir: string, name?: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const [cn, san] = name ? [name, `DNS:${name}`] : ['127.0.0.1', 'IP:127.0.0.1'];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${cn}`, '-addext', `subjectAltName=${san}`], { stdio: 'ignore' });
  return { cert, key };
}
