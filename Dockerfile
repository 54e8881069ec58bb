# karpy's image: one Python package, two entry points — `karpy controller` (the default command)
# and `karpy webapp` (admission webhooks); the chart passes the subcommand as the first argument.
# Stage 1 builds karpy and its dependencies into a virtualenv; stage 2 is the slim interpreter
# plus that virtualenv: no compiler, no pip, no sources, running as an unprivileged user.
# tests/test_dockerfile.py checks these rules (no image is built in the test suite).

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/karpy
WORKDIR /src
COPY pyproject.toml README.md requirements-runtime.lock ./
COPY karpy karpy
COPY controller controller
COPY webapp webapp
COPY templates templates
COPY certs certs
COPY localcluster localcluster
# the dependencies exactly as locked (hashes checked), then karpy without resolving anything
RUN /opt/karpy/bin/pip install --require-hashes --no-deps -r requirements-runtime.lock \
 && /opt/karpy/bin/pip install --no-deps . \
 && /opt/karpy/bin/pip uninstall --yes pip setuptools wheel

FROM python:3.11-slim
# The base image's own installer goes too: nothing in the final image installs or builds code.
RUN rm -rf /usr/local/bin/pip* /usr/local/lib/python3.11/site-packages/pip \
           /usr/local/lib/python3.11/site-packages/setuptools* /usr/local/lib/python3.11/site-packages/wheel*
COPY --from=build /opt/karpy /opt/karpy
ENV PATH=/opt/karpy/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080 8443
ENTRYPOINT ["karpy"]
CMD ["controller"]
