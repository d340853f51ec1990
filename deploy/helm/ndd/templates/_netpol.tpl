{{/* Pieces of the NetworkPolicies (networkpolicy.yaml). */}}
{{- define "ndd.np.egressKafka" -}}
- ports:
    - {port: 53, protocol: UDP}
    - {port: 53, protocol: TCP}
{{- if .Values.devKafka.enabled }}
- to:
    - podSelector:
        matchLabels:
          {{- include "ndd.selector" (dict "ctx" . "component" "dev-kafka" "unit" "") | nindent 10 }}
  ports:
    - {port: 9092, protocol: TCP}
{{- else }}
- {{- with .Values.kafka.egress.cidrs }}
  to:
    {{- range . }}
    - ipBlock: {cidr: {{ . }}}
    {{- end }}
  {{- end }}
  ports:
    {{- range .Values.kafka.egress.ports }}
    - {port: {{ . }}, protocol: TCP}
    {{- end }}
{{- end }}
{{- end -}}
{{- define "ndd.np.ingressMetrics" -}}
- from:
    - namespaceSelector:
        matchLabels:
          {{- toYaml .ctx.Values.networkPolicy.metricsNamespaceSelector | nindent 10 }}
    {{- if .ctx.Values.console.enabled }}
    {{- /* the console's live figures read every worker's /metrics */}}
    - podSelector:
        matchLabels:
          {{- include "ndd.selector" (dict "ctx" .ctx "component" "gui-api" "unit" "") | nindent 10 }}
    {{- end }}
  ports:
    - {port: {{ .port }}, protocol: TCP}
{{- end -}}
