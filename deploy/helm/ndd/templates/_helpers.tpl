{{/*
Shared pieces of every NDD workload: names, labels, the pod and container security
contexts, the Kafka client settings (bootstrap, TLS, SASL: all secret material from Secrets,
mounted as files the daemons read with *_file / *.location settings), probes.
*/}}

{{- define "ndd.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-ndd" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ndd.labels" -}}
app.kubernetes.io/name: ndd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selector labels of one workload: (dict "ctx" $ "component" "aggregation" "unit" "scp") */}}
{{- define "ndd.selector" -}}
app.kubernetes.io/name: ndd
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- if .unit }}
ndd.io/unit: {{ .unit | quote }}
{{- end }}
{{- end -}}

{{- define "ndd.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{ printf "%s@%s" $img.repository $img.digest }}
{{- else -}}
{{ printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end -}}
{{- end -}}

{{- define "ndd.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.runAsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ndd.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The bootstrap servers: the bundled Kafka's Service when it is on, else kafka.bootstrap. */}}
{{- define "ndd.bootstrap" -}}
{{- if .Values.devKafka.enabled -}}
{{ printf "%s-kafka:9092" (include "ndd.fullname" .) }}
{{- else -}}
{{ required "kafka.bootstrap is required (or devKafka.enabled=true)" .Values.kafka.bootstrap }}
{{- end -}}
{{- end -}}

{{/* librdkafka properties of every daemon, as the "kafka" object of its JSON config file. */}}
{{- define "ndd.kafkaProps" -}}
{{- $k := .Values.kafka -}}
{{- $p := dict -}}
{{- range $key, $v := $k.properties }}{{ $_ := set $p $key (toString $v) }}{{ end -}}
{{- if and $k.tls.enabled $k.sasl.enabled -}}
{{- $_ := set $p "security.protocol" "SASL_SSL" -}}
{{- else if $k.tls.enabled -}}
{{- $_ := set $p "security.protocol" "SSL" -}}
{{- else if $k.sasl.enabled -}}
{{- $_ := set $p "security.protocol" "SASL_PLAINTEXT" -}}
{{- end -}}
{{- if $k.tls.enabled -}}
{{- $_ := set $p "ssl.ca.location" "/etc/ndd/kafka-tls/ca.crt" -}}
{{- if $k.tls.clientCertificate -}}
{{- $_ := set $p "ssl.certificate.location" "/etc/ndd/kafka-tls/tls.crt" -}}
{{- $_ := set $p "ssl.key.location" "/etc/ndd/kafka-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- if $k.sasl.enabled -}}
{{- $_ := set $p "sasl.mechanisms" $k.sasl.mechanism -}}
{{- $_ := set $p "sasl.username" $k.sasl.username -}}
{{- $_ := set $p "sasl.password_file" "/etc/ndd/kafka-sasl/password" -}}
{{- end -}}
{{- toJson $p -}}
{{- end -}}

{{/* The volumes every daemon pod has: its config, the Kafka TLS/SASL Secrets, /tmp. */}}
{{- define "ndd.kafkaVolumes" -}}
{{- $k := .Values.kafka -}}
{{- if $k.tls.enabled }}
- name: kafka-tls
  secret:
    secretName: {{ required "kafka.tls.secretName is required with kafka.tls.enabled" $k.tls.secretName }}
    defaultMode: 0440
    items:
      - {key: ca.crt, path: ca.crt}
      {{- if $k.tls.clientCertificate }}
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
      {{- end }}
{{- end }}
{{- if $k.sasl.enabled }}
- name: kafka-sasl
  secret:
    secretName: {{ required "kafka.sasl.secretName is required with kafka.sasl.enabled" $k.sasl.secretName }}
    defaultMode: 0440
    items:
      - {key: {{ $k.sasl.passwordKey }}, path: password}
{{- end }}
- name: tmp
  emptyDir:
    sizeLimit: 16Mi
{{- end -}}

{{- define "ndd.kafkaMounts" -}}
{{- $k := .Values.kafka -}}
{{- if $k.tls.enabled }}
- {name: kafka-tls, mountPath: /etc/ndd/kafka-tls, readOnly: true}
{{- end }}
{{- if $k.sasl.enabled }}
- {name: kafka-sasl, mountPath: /etc/ndd/kafka-sasl, readOnly: true}
{{- end }}
- {name: tmp, mountPath: /tmp}
{{- end -}}

{{/* Probes on the daemon's own HTTP port (docs/observability.md). */}}
{{- define "ndd.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 2
{{- end -}}

{{/* The env of every daemon: logs as JSON lines, the config file. */}}
{{- define "ndd.commonEnv" -}}
- name: NDD_CONFIG
  value: /etc/ndd/config/config.json
{{- end -}}

{{/*
One PodDisruptionBudget and one HorizontalPodAutoscaler for a Deployment:
(dict "ctx" $ "name" NAME "component" C "unit" U "replicas" N "autoscaling" A "lagMetric" M)
*/}}
{{- define "ndd.pdbHpa" -}}
{{- $ctx := .ctx -}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels:
    {{- include "ndd.labels" $ctx | nindent 4 }}
    {{- include "ndd.selector" . | nindent 4 }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      {{- include "ndd.selector" . | nindent 6 }}
{{- if and .autoscaling .autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .name }}
  labels:
    {{- include "ndd.labels" $ctx | nindent 4 }}
    {{- include "ndd.selector" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .name }}
  minReplicas: {{ .replicas }}
  maxReplicas: {{ .autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .autoscaling.targetCPUUtilization }}
    {{- if $ctx.Values.autoscaling.lagMetric.enabled }}
    - type: Pods
      pods:
        metric:
          name: {{ .lagMetric }}
        target:
          type: AverageValue
          averageValue: {{ $ctx.Values.autoscaling.lagMetric.averageValue | quote }}
    {{- end }}
{{- end }}
{{- end -}}

{{/*
The Service of every worker the chart renders and its metrics port, as a JSON list of
{service, component, unit, port}: each aggregation NF type, the correlation, each adapter
feed group, the ingress gateway. The console reads their /metrics (metrics-urls) and its
NetworkPolicy admits exactly these.
*/}}
{{- define "ndd.workerServices" -}}
{{- $fn := include "ndd.fullname" . -}}
{{- $l := list -}}
{{- range $nf := .Values.aggregation.nfTypes }}
{{- $unit := lower $nf.nfType | replace "_" "-" }}
{{- $l = append $l (dict "service" (printf "%s-aggregation-%s" $fn $unit) "component" "aggregation" "unit" $unit "port" (int $.Values.aggregation.port)) }}
{{- end }}
{{- if .Values.correlation.enabled }}
{{- $l = append $l (dict "service" (printf "%s-correlation" $fn) "component" "correlation" "unit" "" "port" (int .Values.correlation.port)) }}
{{- end }}
{{- range $g := .Values.adapter.feedGroups }}
{{- $l = append $l (dict "service" (printf "%s-adapter-%s" $fn $g.name) "component" "adapter" "unit" $g.name "port" (int $.Values.adapter.port)) }}
{{- end }}
{{- if .Values.ingress.enabled }}
{{- $l = append $l (dict "service" (printf "%s-ingress" $fn) "component" "ingress" "unit" "" "port" (int .Values.ingress.port)) }}
{{- end }}
{{- toJson $l -}}
{{- end -}}

{{/* A Kubernetes quantity ("250m", "1", 0.5, "512Mi", "1G") as a plain number: cores or bytes. */}}
{{- define "ndd.quantity" -}}
{{- $s := toString . -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $unit := get (dict "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0) (trimPrefix $num $s) -}}
{{- mulf (float64 $num) (default 1.0 $unit) -}}
{{- end -}}

{{/* The aggregation's and the correlation's exactly-once settings from .Values.exactlyOnce, as
JSON (merged before the component's own settings, which override them). */}}
{{- define "ndd.exactlyOnce" -}}
{{- $e := dict "exactly-once" (default false .Values.exactlyOnce.enabled) -}}
{{- if gt (int (default 0 .Values.exactlyOnce.transactionMs)) 0 -}}
{{- $_ := set $e "transaction-ms" (printf "%dms" (int .Values.exactlyOnce.transactionMs)) -}}
{{- end -}}
{{- toJson $e -}}
{{- end -}}
