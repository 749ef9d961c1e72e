// The login form: the token goes to POST /console/login as JSON (with the console's header), which
// answers with the session cookie; then on to the console.
const form = document.getElementById('login');
const error = document.getElementById('login-error');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  error.hidden = true;
  const res = await fetch('/console/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-parley-console': '1' },
    body: JSON.stringify({ token: form.token.value }),
  });
  if (res.status === 204) {
    location.assign('/console');
    return;
  }
  const body = await res.json().catch(() => null);
  error.textContent = body?.error?.message ?? `Login failed (${res.status}).`;
  error.hidden = false;
});
