# karpy's image: the controller and the webapp (webhooks + dashboard) from one Python package.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY karpy karpy
COPY controller controller
COPY webapp webapp
COPY templates templates
COPY certs certs
COPY localcluster localcluster
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532:65532
ENTRYPOINT ["karpy"]
CMD ["controller"]
